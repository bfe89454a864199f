"""Fallback judge when no terraform binary / aws provider is available (runs inside the sandbox).

Syntax: python-hcl2 parses every .tf file, then Terraform *language* rules are checked (block
types and labels, duplicate names, quoted type constraints, undeclared references, count/each
outside their context, static depends_on, dynamic blocks, module sources, providers other than
hashicorp/aws), then arguments, nested blocks and literal value types of aws resources, data
sources and provider blocks against a schema snapshot of hashicorp/aws (make_schema.py). The
provider's own validation (enumerations, name formats, conflicting arguments) is NOT run: this is
weaker than `terraform validate`.

Semantic input: a pseudo plan with the shape of `terraform show -json` (resource_changes,
configuration with references, variables, outputs), built by evaluating the configuration with a
small HCL expression evaluator: variables (defaults and the task's values), locals, count,
for_each, dynamic blocks, for expressions, common functions, local modules and
aws_iam_policy_document. Computed attributes (ids, ARNs) are unknown, as in a plan; attributes the
configuration does not set are absent (a real plan lists them with provider defaults).
"""
from __future__ import annotations

import base64
import ipaddress
import json
import re
from pathlib import Path

from lark import Token, Tree
from lark.exceptions import LarkError

import hcl2

AWS = "registry.terraform.io/hashicorp/aws"
TOP_LABELS = {"terraform": 0, "locals": 0, "provider": 1, "variable": 1, "output": 1, "module": 1,
              "resource": 2, "data": 2, "moved": 0, "import": 0, "removed": 0, "check": 1}
META = {"count", "for_each", "provider", "depends_on", "lifecycle", "provisioner", "connection"}


class _Unknown:
    def __repr__(self):
        return "(known after apply)"


UNKNOWN = _Unknown()


class ConfigError(Exception):
    """A Terraform language error (what terraform validate would report)."""

    def __init__(self, message, line=None, file=None, static=True):
        super().__init__(message)
        # static: terraform validate finds it too (types, not values); else only the plan would
        self.line, self.file, self.static = line, file, static

    def text(self):
        where = f"{self.file}:{self.line}: " if self.file and self.line else (f"{self.file}: " if self.file else "")
        return where + str(self)


def has_unknown(v) -> bool:
    if v is UNKNOWN:
        return True
    if isinstance(v, dict):
        return any(has_unknown(x) for x in v.values())
    if isinstance(v, list):
        return any(has_unknown(x) for x in v)
    return False


def known_part(v):
    if v is UNKNOWN:
        return None
    if isinstance(v, dict):
        return {k: known_part(x) for k, x in v.items()}
    if isinstance(v, list):
        return [known_part(x) for x in v]
    return v


def unknown_mask(v):
    if v is UNKNOWN:
        return True
    if isinstance(v, dict):
        return {k: unknown_mask(x) for k, x in v.items() if has_unknown(x)}
    if isinstance(v, list):
        return [unknown_mask(x) if has_unknown(x) else False for x in v]
    return False


# --- the parse tree ------------------------------------------------------------------------------

def children(node):
    return [c for c in node.children if isinstance(c, Tree) and c.data != "new_line_or_comment"]


def line_of(node):
    meta = getattr(node, "meta", None)
    return getattr(meta, "line", None) if meta and not getattr(meta, "empty", True) else None


def name_of(node) -> str:
    """Text of an identifier/keyword/literal name node, or of a (label) string."""
    if isinstance(node, Token):
        return str(node)
    if node.data == "string":
        return "".join(str(p.children[0]) for p in node.children if isinstance(p, Tree) and p.data == "string_part"
                       and isinstance(p.children[0], Token))
    return "".join(str(t) for t in node.scan_values(lambda t: isinstance(t, Token)))


class Block:
    def __init__(self, type_, labels, body, line, file):
        self.type, self.labels, self.body, self.line, self.file = type_, labels, body, line, file
        self.attrs, self.blocks = {}, []
        for item in children(body):
            if item.data == "attribute":
                key, expr = item.children[0], item.children[-1]
                self.attrs[name_of(key)] = expr
            elif item.data == "block":
                self.blocks.append(make_block(item, file))

    def sub(self, type_):
        return [b for b in self.blocks if b.type == type_]


def make_block(node, file):
    parts = [c for c in node.children if isinstance(c, Tree) and c.data != "new_line_or_comment"]
    body = parts[-1]
    names = [name_of(p) for p in parts[:-1]]
    return Block(names[0], names[1:], body, line_of(node), file)


def parse_files(files):
    blocks, attrs = [], []
    for path in files:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
        try:
            tree = hcl2.parses_to_tree(text)
        except LarkError as e:
            line = getattr(e, "line", None)
            msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise ConfigError(f"HCL parse error: {msg}", line, Path(path).name) from None
        except Exception as e:  # noqa: BLE001 - python-hcl2 raises assorted errors on bad input
            raise ConfigError(f"HCL parse error: {type(e).__name__}: {e}", None, Path(path).name) from None
        body = tree.children[0]
        for item in children(body):
            if item.data == "block":
                blocks.append(make_block(item, Path(path).name))
            elif item.data == "attribute":
                attrs.append((name_of(item.children[0]), line_of(item), Path(path).name))
    if attrs:
        name, line, file = attrs[0]
        raise ConfigError(f"Unsupported argument: an argument named \"{name}\" is not expected at the top level",
                          line, file)
    return blocks


# --- traversals and references ---------------------------------------------------------------

def unwrap(node):
    while isinstance(node, Tree) and node.data == "expr_term" and len(children(node)) == 1 and not any(
            isinstance(c, Token) and c.type == "LPAR" for c in node.children):
        node = children(node)[0]
    return node


def traversal(node):
    """(root name, steps) for identifier/attribute/index chains; steps: ('attr', name) or ('index', node)."""
    node = unwrap(node)
    if isinstance(node, Tree) and node.data == "identifier":
        return name_of(node), []
    if isinstance(node, Tree) and node.data == "get_attr_expr_term":
        base, attr = node.children
        root = traversal(base)
        if root is None:
            return None
        return root[0], root[1] + [("attr", name_of(attr.children[-1]))]
    if isinstance(node, Tree) and node.data == "index_expr_term":
        base, idx = node.children
        root = traversal(base)
        if root is None:
            return None
        if idx.data == "short_index":
            return root[0], root[1] + [("index", int(str(idx.children[-1])))]
        return root[0], root[1] + [("index", children(idx)[0])]
    return None


def static_index(step):
    """Literal index of a step as Python value, or None when it is an expression."""
    kind, value = step
    if kind != "index":
        return None
    if isinstance(value, int):
        return value
    node = unwrap(value)
    if isinstance(node, Tree) and node.data == "int_lit":
        return int(str(node.children[0]))
    if isinstance(node, Tree) and node.data == "string" and all(
            isinstance(p.children[0], Token) and p.children[0].type == "STRING_CHARS" for p in node.children
            if isinstance(p, Tree)):
        return unescape(name_of(node))
    return None


def ref_strings(root, steps):
    """Terraform's reference strings for a traversal: its static prefixes, longest first.

    aws_subnet.this["a"].id -> aws_subnet.this["a"].id, aws_subnet.this["a"], aws_subnet.this;
    var.azs[count.index] -> var.azs (the dynamic index ends the static part).
    """
    texts, text = [], root
    for step in steps:
        if step[0] == "attr":
            text += "." + step[1]
        else:
            idx = static_index(step)
            if idx is None:
                break
            text += f"[{json.dumps(idx)}]"
        texts.append(text)
    minimum = 2 if root == "data" else 1       # data.TYPE.NAME / var.NAME / TYPE.NAME ...
    return list(reversed(texts[minimum - 1:])) if len(texts) >= minimum else []


LOCAL_NAMES = {"self"}


def references(node, bound=frozenset()):
    """Reference strings in an expression, in source order (for-expression symbols excluded)."""
    out = []

    def walk(n, bound):
        if not isinstance(n, Tree):
            return
        t = traversal(n) if n.data in ("expr_term", "identifier", "get_attr_expr_term", "index_expr_term") else None
        if t is not None:
            root, steps = t
            if root not in bound and root not in ("true", "false", "null"):
                out.extend(ref_strings(root, steps))
            for kind, value in steps:
                if kind == "index" and not isinstance(value, int):
                    walk(value, bound)
            return
        if n.data in ("for_tuple_expr", "for_object_expr"):
            intro = next(c for c in n.children if isinstance(c, Tree) and c.data == "for_intro")
            names = [name_of(c) for c in intro.children if isinstance(c, Tree) and c.data == "identifier"]
            walk(children(intro)[-1], bound)
            inner = bound | set(names)
            for c in n.children:
                if isinstance(c, Tree) and c is not intro:
                    walk(c, inner)
            return
        for c in n.children:
            walk(c, bound)

    walk(node, frozenset(bound))
    return list(dict.fromkeys(out))


def has_call(node) -> bool:
    return any(isinstance(n, Tree) and n.data in ("function_call", "for_tuple_expr", "for_object_expr", "conditional",
                                                  "binary_op", "unary_op")
               for n in node.iter_subtrees())


# --- values --------------------------------------------------------------------------------------

ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}


def unescape(text: str) -> str:
    def rep(m):
        s = m.group(1)
        if s[0] in ESCAPES:
            return ESCAPES[s[0]]
        if s[0] in "uU":
            return chr(int(s[1:], 16))
        return m.group(0)
    return re.sub(r"\\(u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)", rep, text)


def tostr(v):
    if v is UNKNOWN:
        return UNKNOWN
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if v is None:
        raise ConfigError("Invalid template interpolation value: null", static=False)
    if isinstance(v, (dict, list)):
        raise ConfigError("Invalid template interpolation value: cannot include a collection in a string",
                          static=False)
    return str(v)


def iterate(coll):
    if isinstance(coll, dict):
        return list(coll.items())
    if isinstance(coll, list):
        return list(enumerate(coll))
    raise ConfigError("A for expression or for_each needs a collection", static=False)


def _cidrsubnet(prefix, newbits, netnum):
    net = ipaddress.ip_network(prefix, strict=False)
    return str(list(net.subnets(prefixlen_diff=int(newbits)))[int(netnum)]) if newbits <= 16 else \
        str(ipaddress.ip_network((int(net.network_address) + (int(netnum) << (net.max_prefixlen - net.prefixlen - int(newbits))),
                                  net.prefixlen + int(newbits))))


def _flatten(v):
    out = []
    for x in v:
        out.extend(_flatten(x) if isinstance(x, list) else [x])
    return out


def _setify(v):
    if isinstance(v, dict):
        raise ConfigError("Invalid function argument: Invalid value for \"v\" parameter: cannot convert map to set "
                          "of any single type")
    out = []
    for x in (v.values() if isinstance(v, dict) else v):
        if x not in out:
            out.append(x)
    try:
        return sorted(out)
    except TypeError:
        return out


FUNCTIONS = {
    "jsonencode": lambda v: json.dumps(v, separators=(",", ":")),
    "jsondecode": lambda s: json.loads(s),
    "concat": lambda *ls: [x for l in ls for x in l],
    "lower": str.lower, "upper": str.upper, "title": str.title,
    "format": lambda f, *a: re.sub(r"%[-+ 0#]*\d*(?:\.\d+)?[sdfvqt]", "{}", f).format(*[tostr(x) for x in a]),
    "join": lambda sep, l: sep.join(tostr(x) for x in l),
    "split": lambda sep, s: s.split(sep),
    "replace": lambda s, a, b: s.replace(a, b),
    "tostring": tostr, "tonumber": lambda v: float(v) if "." in str(v) else int(v),
    "tobool": lambda v: v if isinstance(v, bool) else {"true": True, "false": False}[v],
    "toset": _setify, "tolist": lambda v: _setify(v) if isinstance(v, dict) else list(v), "tomap": lambda v: dict(v),
    "keys": lambda m: sorted(m), "values": lambda m: [m[k] for k in sorted(m)],
    "lookup": lambda m, k, *d: m[k] if k in m else d[0],
    "element": lambda l, i: l[int(i) % len(l)], "contains": lambda l, v: v in l,
    "coalesce": lambda *a: next(x for x in a if x not in (None, "")),
    "compact": lambda l: [x for x in l if x not in (None, "")], "flatten": _flatten,
    "distinct": lambda l: [x for i, x in enumerate(l) if x not in l[:i]],
    "cidrsubnet": _cidrsubnet, "base64encode": lambda s: base64.b64encode(s.encode()).decode(),
    "base64decode": lambda s: base64.b64decode(s).decode(), "min": min, "max": max, "abs": abs,
    "zipmap": lambda k, v: dict(zip(k, v)), "range": lambda *a: list(range(*[int(x) for x in a])),
    "substr": lambda s, o, n: s[int(o):] if n == -1 else s[int(o):int(o) + int(n)],
    "trimspace": str.strip, "startswith": str.startswith, "endswith": str.endswith,
    "sort": sorted, "reverse": lambda l: list(reversed(l)), "sum": sum,
    "one": lambda l: l[0] if l else None, "length": len, "chomp": lambda s: s.rstrip("\r\n"),
    "trimprefix": lambda s, p: s[len(p):] if s.startswith(p) else s,
    "trimsuffix": lambda s, p: s[:-len(p)] if p and s.endswith(p) else s,
    "md5": lambda s: __import__("hashlib").md5(s.encode()).hexdigest(),
    "sha256": lambda s: __import__("hashlib").sha256(s.encode()).hexdigest(),
    "timestamp": lambda: UNKNOWN, "uuid": lambda: UNKNOWN,
    "file": lambda p: UNKNOWN, "filebase64": lambda p: UNKNOWN, "filebase64sha256": lambda p: UNKNOWN,
    "templatefile": lambda *a: UNKNOWN,
}


# --- evaluation ----------------------------------------------------------------------------------

class Module:
    """One module instance: its blocks, variable values and lazily evaluated locals/resources/outputs."""

    def __init__(self, blocks, variables, prefix="", folder=Path(".")):
        self.blocks, self.prefix, self.folder = blocks, prefix, folder
        self.vars = variables
        self.local_nodes = {k: v for b in blocks if b.type == "locals" for k, v in b.attrs.items()}
        self.locals, self.resolving = {}, set()
        self.resources = {(b.labels[0], b.labels[1]): b for b in blocks if b.type == "resource" and len(b.labels) == 2}
        self.datas = {(b.labels[0], b.labels[1]): b for b in blocks if b.type == "data" and len(b.labels) == 2}
        self.module_blocks = {b.labels[0]: b for b in blocks if b.type == "module" and b.labels}
        self.instances = {}          # (mode, type, name) -> None | list | dict of instance values
        self.children = {}           # module name -> Module | None
        self.changes = []            # resource_changes entries

    # values of references
    def local(self, name):
        if name not in self.locals:
            if name not in self.local_nodes:
                raise ConfigError(f"Reference to undeclared local value: local.{name}")
            if name in self.resolving:
                raise ConfigError(f"Cycle in local value local.{name}")
            self.resolving.add(name)
            self.locals[name] = self.ev(self.local_nodes[name], {})
            self.resolving.discard(name)
        return self.locals[name]

    def resource(self, mode, type_, name):
        key = (mode, type_, name)
        if key not in self.instances:
            table = self.resources if mode == "managed" else self.datas
            block = table.get((type_, name))
            if block is None:
                return UNKNOWN
            self.instances[key] = UNKNOWN          # cycle guard
            self.instances[key] = self.expand(block, mode)
        return self.instances[key]

    def module(self, name):
        if name not in self.children:
            self.children[name] = None
            block = self.module_blocks.get(name)
            if block is None:
                return UNKNOWN
            self.children[name] = build_module(self, block)
        child = self.children[name]
        return child.outputs() if child else UNKNOWN

    def outputs(self):
        return {b.labels[0]: self.ev(b.attrs["value"], {}) for b in self.blocks
                if b.type == "output" and b.labels and "value" in b.attrs}

    # resources
    def expand(self, block, mode):
        """Evaluate a resource/data block: its instance values (dict, list for count, dict for for_each)."""
        try:
            return self._expand(block, mode)
        except ConfigError as e:
            if not e.file:
                e.line, e.file = block.line, block.file
            raise

    def _expand(self, block, mode):
        type_, name = block.labels
        base = f"{self.prefix}{'data.' if mode == 'data' else ''}{type_}.{name}"
        if "count" in block.attrs:
            n = self.ev(block.attrs["count"], {})
            if n is UNKNOWN:
                return UNKNOWN
            out = []
            for i in range(int(n)):
                out.append(self.instance(block, mode, f"{base}[{i}]", i, {"count": {"index": i}}))
            return out
        if "for_each" in block.attrs:
            coll = self.ev(block.attrs["for_each"], {})
            # a map needs known keys only; a set needs known elements
            if coll is UNKNOWN or (isinstance(coll, list) and has_unknown(coll)):
                return UNKNOWN
            if isinstance(coll, list):
                coll = {str(x): x for x in coll}
            out = {}
            for k, v in coll.items():
                out[k] = self.instance(block, mode, f"{base}[{json.dumps(k)}]", k, {"each": {"key": k, "value": v}})
            return out
        return self.instance(block, mode, base, None, {})

    def instance(self, block, mode, address, index, scope):
        try:
            values = self.body_values(block, scope)
        except ConfigError as e:
            if not e.file:
                e.line, e.file = block.line, block.file
            raise
        type_ = block.labels[0]
        if mode == "data" and type_ == "aws_iam_policy_document":
            values["json"] = policy_document(values)
        computed = {"id": UNKNOWN, "arn": UNKNOWN}
        full = {**computed, **values}
        if mode == "managed":
            entry = {"address": address, "mode": "managed", "type": type_, "name": block.labels[1],
                     "provider_name": AWS if type_.startswith("aws_") else "", "change": {
                         "actions": ["create"], "before": None, "after": known_part(values),
                         "after_unknown": {k: unknown_mask(v) for k, v in full.items() if has_unknown(v)}}}
            if self.prefix:
                entry["module_address"] = self.prefix.rstrip(".")
            if index is not None:
                entry["index"] = index
            self.changes.append(entry)
        return full

    def body_values(self, block, scope):
        values = {}
        for key, expr in block.attrs.items():
            if key in META:
                continue
            values[key] = self.ev(expr, scope)
        for sub in block.blocks:
            if sub.type in ("lifecycle", "provisioner", "connection"):
                continue
            if sub.type == "dynamic" and sub.labels:
                label = sub.labels[0]
                iterator = name_of(unwrap(sub.attrs["iterator"])) if "iterator" in sub.attrs else label
                coll = self.ev(sub.attrs["for_each"], scope) if "for_each" in sub.attrs else []
                content = sub.sub("content")
                if has_unknown(coll):
                    values[label] = UNKNOWN
                    continue
                items = values.setdefault(label, [])
                if items is UNKNOWN:
                    continue
                for k, v in iterate(coll if not isinstance(coll, list) else list(coll)):
                    if content:
                        items.append(self.body_values(content[0], {**scope, iterator: {"key": k, "value": v}}))
                continue
            items = values.setdefault(sub.type, [])
            if items is not UNKNOWN:
                items.append(self.body_values(sub, scope))
        return values

    # expressions
    def ev(self, node, scope):
        try:
            return self._ev(node, scope)
        except ConfigError:
            raise
        except (KeyError, IndexError, TypeError, ValueError, AttributeError, ZeroDivisionError, StopIteration):
            return UNKNOWN

    def _ev(self, node, scope):
        if isinstance(node, Token):
            return str(node)
        d = node.data
        if d == "expr_term":
            inner = children(node)
            return self._ev(inner[0], scope) if inner else None
        if d == "int_lit":
            return int(str(node.children[0]))
        if d == "float_lit":
            return float(str(node.children[0]))
        if d == "literal_value":
            return {"true": True, "false": False, "null": None}[str(node.children[0])]
        if d == "string":
            return self.template(node, scope)
        if d in ("heredoc_template", "heredoc_template_trim"):
            return self.heredoc(str(node.children[0]), d.endswith("trim"), scope)
        if d == "tuple":
            return [self._ev(c, scope) for c in children(node)]
        if d == "object":
            out = {}
            for elem in children(node):
                key_node, value = children(elem)[0], children(elem)[-1]
                k = unwrap(children(key_node)[0]) if children(key_node) else key_node
                key = name_of(k) if isinstance(k, Tree) and k.data in ("identifier", "keyword") else self._ev(k, scope)
                if key is UNKNOWN:
                    return UNKNOWN
                out[tostr(key)] = self._ev(value, scope)
            return out
        if d in ("identifier", "get_attr_expr_term", "index_expr_term"):
            t = traversal(node)
            if t is not None:
                return self.resolve(t[0], t[1], scope)
            base, step = node.children
            value = self._ev(base, scope)
            if d == "get_attr_expr_term":
                return self.apply(value, [("attr", name_of(step.children[-1]))], scope)
            return self.apply(value, [("index", int(str(step.children[-1])) if step.data == "short_index"
                                       else children(step)[0])], scope)
        if d in ("attr_splat_expr_term", "full_splat_expr_term"):
            base, splat = node.children
            value = self._ev(base, scope)
            steps = []
            for s in children(splat):
                if s.data == "get_attr":
                    steps.append(("attr", name_of(s.children[-1])))
                else:
                    steps.append(("index", int(str(s.children[-1])) if s.data == "short_index" else children(s)[0]))
            if value is UNKNOWN:
                return UNKNOWN
            if value is None:
                return []
            items = value if isinstance(value, list) else [value]
            return [self.apply(x, steps, scope) for x in items]
        if d == "function_call":
            return self.call(node, scope)
        if d == "conditional":
            parts = children(node)
            cond = self._ev(parts[0], scope)
            if cond is UNKNOWN:
                return UNKNOWN
            return self._ev(parts[1] if cond else parts[2], scope)
        if d == "binary_op":
            left, term = children(node)[0], children(node)[1]
            op = str(term.children[0].children[0])
            right = children(term)[-1]
            a = self._ev(left, scope)
            if op == "&&" and a is False:
                return False
            if op == "||" and a is True:
                return True
            b = self._ev(right, scope)
            if a is UNKNOWN or b is UNKNOWN:
                return UNKNOWN
            return {"==": lambda: a == b, "!=": lambda: a != b, "<": lambda: a < b, ">": lambda: a > b,
                    "<=": lambda: a <= b, ">=": lambda: a >= b, "+": lambda: a + b, "-": lambda: a - b,
                    "*": lambda: a * b, "/": lambda: a / b, "%": lambda: a % b,
                    "&&": lambda: bool(a and b), "||": lambda: bool(a or b)}[op]()
        if d == "unary_op":
            op, value = str(node.children[0]), self._ev(node.children[1], scope)
            if value is UNKNOWN:
                return UNKNOWN
            return -value if op == "-" else not value
        if d in ("for_tuple_expr", "for_object_expr"):
            return self.for_expr(node, scope)
        if d == "template_string":
            return unescape(str(node.children[0])[2:-2])
        return UNKNOWN

    def template(self, node, scope):
        out = []
        for part in node.children:
            if not isinstance(part, Tree):
                continue
            inner = part.children[0]
            if isinstance(inner, Token):
                if inner.type == "ESCAPED_INTERPOLATION":
                    out.append("${" + str(inner)[3:])
                elif inner.type == "ESCAPED_DIRECTIVE":
                    out.append("%{" + str(inner)[3:])
                else:
                    out.append(unescape(str(inner)))
            elif inner.data == "interpolation":
                v = tostr(self._ev(children(inner)[0], scope))
                if v is UNKNOWN:
                    return UNKNOWN
                out.append(v)
            else:
                return UNKNOWN           # template directives: not evaluated here
        return "".join(out)

    def heredoc(self, raw, trim, scope):
        m = re.match(r"<<-?([A-Za-z][\w.-]*)\r?\n", raw)
        body = raw[m.end():]
        body = body[: body.rstrip().rfind("\n") + 1] if "\n" in body.rstrip() else ""
        if trim:
            lines = body.split("\n")
            indent = min((len(l) - len(l.lstrip()) for l in lines if l.strip()), default=0)
            body = "\n".join(l[indent:] for l in lines)
        if "${" not in body:
            return body
        try:
            tree = hcl2.parses_to_tree("x = \"" + body.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + "\"\n")
            return self._ev(children(children(tree.children[0])[0])[-1], scope)
        except Exception:  # noqa: BLE001
            return UNKNOWN

    def resolve(self, root, steps, scope):
        if root in scope:
            return self.apply(scope[root], steps, scope)
        if root in ("true", "false", "null"):
            return {"true": True, "false": False, "null": None}[root]
        if not steps:
            raise ConfigError(f"Invalid reference: a bare identifier \"{root}\" is not a value")
        first = steps[0][1] if steps[0][0] == "attr" else None
        if root == "var":
            if first not in self.vars:
                raise ConfigError(f"Reference to undeclared input variable: var.{first}")
            return self.apply(self.vars[first], steps[1:], scope)
        if root == "local":
            return self.apply(self.local(first), steps[1:], scope)
        if root in ("count", "each"):
            raise ConfigError(f"Reference to \"{root}\" in a context without {root if root == 'count' else 'for_each'}",
                              static=False)
        if root == "module":
            return self.apply(self.module(first), steps[1:], scope)
        if root == "path":
            return "."
        if root == "terraform":
            return self.apply({"workspace": "default"}, steps[1:], scope)
        if root == "data":
            if len(steps) < 2:
                return UNKNOWN
            if (steps[0][1], steps[1][1]) not in self.datas:
                raise ConfigError(f"Reference to undeclared resource: data.{steps[0][1]}.{steps[1][1]}")
            return self.apply(self.resource("data", steps[0][1], steps[1][1]), steps[2:], scope)
        if (root, first) in self.resources:
            return self.apply(self.resource("managed", root, first), steps[1:], scope)
        raise ConfigError(f"Reference to undeclared resource: {root}.{first}")

    def apply(self, value, steps, scope):
        for kind, key in steps:
            if value is UNKNOWN:
                return UNKNOWN
            if kind == "index" and not isinstance(key, int):
                key = self._ev(key, scope)
                if key is UNKNOWN:
                    return UNKNOWN
            if isinstance(value, list):
                if kind == "attr":
                    raise ConfigError(f"Unsupported attribute: a list has no attribute \"{key}\"")
                value = value[int(key)]
            elif isinstance(value, dict):
                if kind == "index":
                    key = tostr(key)
                value = value.get(key, UNKNOWN)
            else:
                return UNKNOWN
        return value

    def call(self, node, scope):
        fname = name_of(node.children[0])
        args_node = next((c for c in node.children if isinstance(c, Tree) and c.data == "arguments"), None)
        arg_nodes = children(args_node) if args_node is not None else []
        if fname in ("try", "can"):
            for a in arg_nodes:
                try:
                    v = self._ev(a, scope)
                except ConfigError:
                    continue
                if fname == "can":
                    return True
                return v
            return False if fname == "can" else UNKNOWN
        args = [self._ev(a, scope) for a in arg_nodes]
        if fname == "length":
            return UNKNOWN if args[0] is UNKNOWN else len(args[0])
        if fname == "merge":
            if any(a is UNKNOWN for a in args):
                return UNKNOWN
            out = {}
            for a in args:
                out.update(a or {})
            return out
        if fname not in FUNCTIONS:
            return UNKNOWN
        if any(has_unknown(a) for a in args):
            return UNKNOWN
        return FUNCTIONS[fname](*args)

    def for_expr(self, node, scope):
        intro = next(c for c in node.children if isinstance(c, Tree) and c.data == "for_intro")
        names = [name_of(c) for c in intro.children if isinstance(c, Tree) and c.data == "identifier"]
        coll = self._ev(children(intro)[-1], scope)
        if has_unknown(coll):
            return UNKNOWN
        cond = next((c for c in node.children if isinstance(c, Tree) and c.data == "for_cond"), None)
        body = [c for c in children(node) if c is not intro and c is not cond]
        grouping = any(isinstance(c, Token) and c.type == "ELLIPSIS" for c in node.children)
        out = [] if node.data == "for_tuple_expr" else {}
        for k, v in iterate(coll):
            inner = {**scope, **({names[0]: k, names[1]: v} if len(names) == 2 else {names[0]: v})}
            if cond is not None:
                keep = self._ev(children(cond)[0], inner)
                if keep is UNKNOWN:
                    return UNKNOWN
                if not keep:
                    continue
            if node.data == "for_tuple_expr":
                out.append(self._ev(body[0], inner))
            else:
                key = self._ev(body[0], inner)
                if key is UNKNOWN:
                    return UNKNOWN
                if grouping:
                    out.setdefault(tostr(key), []).append(self._ev(body[1], inner))
                else:
                    out[tostr(key)] = self._ev(body[1], inner)
        return out


def policy_document(values):
    """aws_iam_policy_document rendered like the provider does (single values as strings)."""
    if has_unknown(values.get("statement", [])):
        return UNKNOWN

    def one(v):
        v = list(v)
        return v[0] if len(v) == 1 else v

    statements = []
    for st in values.get("statement", []):
        out = {}
        if st.get("sid"):
            out["Sid"] = st["sid"]
        out["Effect"] = st.get("effect") or "Allow"
        for key, name in (("actions", "Action"), ("not_actions", "NotAction"), ("resources", "Resource"),
                          ("not_resources", "NotResource")):
            if st.get(key):
                out[name] = one(st[key])
        for key, name in (("principals", "Principal"), ("not_principals", "NotPrincipal")):
            if st.get(key):
                out[name] = {p["type"]: one(p["identifiers"]) for p in st[key]}
        if st.get("condition"):
            cond = {}
            for c in st["condition"]:
                cond.setdefault(c["test"], {})[c["variable"]] = one(c["values"])
            out["Condition"] = cond
        statements.append(out)
    return json.dumps({"Version": values.get("version") or "2012-10-17", "Statement": statements},
                      separators=(",", ":"))


def variable_values(blocks, given):
    out = {}
    probe = Module([], {})
    for b in blocks:
        if b.type == "variable" and b.labels:
            name = b.labels[0]
            if name in given:
                out[name] = given[name]
            elif "default" in b.attrs:
                out[name] = probe.ev(b.attrs["default"], {})
            else:
                out[name] = UNKNOWN
            out[name] = apply_optional_defaults(b, out[name])
    return out


def apply_optional_defaults(block, value):
    """Fill `optional(type, default)` object attributes (read from the type expression's tokens)."""
    if "type" not in block.attrs or not isinstance(value, (dict, list)):
        return value
    text = "".join(str(t) for t in block.attrs["type"].scan_values(lambda t: isinstance(t, Token))).replace(" ", "")
    defaults = {}
    for m in re.finditer(r"(\w+)=optional\(\w+(?:\(\w+\))?,([^()]+)\)", text):
        raw = m.group(2)
        try:
            defaults[m.group(1)] = json.loads(raw)
        except ValueError:
            defaults[m.group(1)] = raw.strip('"')
    if not defaults:
        return value
    if isinstance(value, list):
        return [{**defaults, **x} if isinstance(x, dict) else x for x in value]
    if value and all(isinstance(x, dict) for x in value.values()) and text.startswith("map("):
        return {k: {**defaults, **x} for k, x in value.items()}
    return {**defaults, **value}


def build_module(parent, block):
    source = parent.ev(block.attrs.get("source"), {}) if "source" in block.attrs else None
    if not isinstance(source, str) or not source.startswith(("./", "../")):
        return None
    folder = (parent.folder / source)
    files = sorted(folder.glob("*.tf"))
    blocks = parse_files(files)
    given = {k: parent.ev(v, {}) for k, v in block.attrs.items() if k not in ("source", "version", "providers",
                                                                            "count", "for_each", "depends_on")}
    child = Module(blocks, variable_values(blocks, given), prefix=f"{parent.prefix}module.{block.labels[0]}.",
                   folder=folder)
    child.changes = parent.changes
    for key in list(child.resources):
        child.resource("managed", *key)
    return child


# --- configuration section -----------------------------------------------------------------------

def expression(node):
    refs = references(node)
    if refs:
        return {"references": refs}
    if has_call(node):
        return {}
    value = Module([], {}).ev(node, {})
    return {} if has_unknown(value) else {"constant_value": value}


def block_expressions(block):
    out = {}
    for key, node in block.attrs.items():
        if key not in META:
            out[key] = expression(node)
    for sub in block.blocks:
        if sub.type in ("lifecycle", "provisioner", "connection", "dynamic"):
            continue
        out.setdefault(sub.type, []).append(block_expressions(sub))
    return out


def module_config(blocks, folder):
    cfg = {"resources": []}
    for b in blocks:
        if b.type in ("resource", "data") and len(b.labels) == 2:
            mode = "managed" if b.type == "resource" else "data"
            entry = {"address": ("data." if mode == "data" else "") + f"{b.labels[0]}.{b.labels[1]}",
                     "mode": mode, "type": b.labels[0], "name": b.labels[1],
                     "provider_config_key": "aws", "expressions": block_expressions(b)}
            if "count" in b.attrs:
                entry["count_expression"] = expression(b.attrs["count"])
            if "for_each" in b.attrs:
                entry["for_each_expression"] = expression(b.attrs["for_each"])
            if "depends_on" in b.attrs:
                entry["depends_on"] = references(b.attrs["depends_on"])
            cfg["resources"].append(entry)
        elif b.type == "variable" and b.labels:
            v = {}
            if "default" in b.attrs:
                v["default"] = known_part(Module([], {}).ev(b.attrs["default"], {}))
            for key in ("description", "sensitive"):
                if key in b.attrs:
                    v[key] = known_part(Module([], {}).ev(b.attrs[key], {}))
            cfg.setdefault("variables", {})[b.labels[0]] = v
        elif b.type == "output" and b.labels:
            out = {"expression": expression(b.attrs["value"])} if "value" in b.attrs else {}
            if "sensitive" in b.attrs:
                out["sensitive"] = bool(Module([], {}).ev(b.attrs["sensitive"], {}))
            cfg.setdefault("outputs", {})[b.labels[0]] = out
        elif b.type == "module" and b.labels:
            call = {"source": Module([], {}).ev(b.attrs["source"], {}) if "source" in b.attrs else "",
                    "expressions": {k: expression(v) for k, v in b.attrs.items()
                                    if k not in ("source", "version", "providers", "count", "for_each", "depends_on")}}
            src = call["source"]
            if isinstance(src, str) and src.startswith(("./", "../")) and (folder / src).is_dir():
                try:
                    call["module"] = module_config(parse_files(sorted((folder / src).glob("*.tf"))), folder / src)
                except ConfigError:
                    pass
            cfg.setdefault("module_calls", {})[b.labels[0]] = call
    return cfg


# --- language checks (what terraform validate would say without a provider schema) --------------

def language_problems(blocks, folder):
    seen = {}
    declared_vars = {b.labels[0] for b in blocks if b.type == "variable" and b.labels}
    declared_locals = {k for b in blocks if b.type == "locals" for k in b.attrs}
    resources = {(b.labels[0], b.labels[1]) for b in blocks if b.type == "resource" and len(b.labels) == 2}
    datas = {(b.labels[0], b.labels[1]) for b in blocks if b.type == "data" and len(b.labels) == 2}
    modules = {b.labels[0] for b in blocks if b.type == "module" and b.labels}
    for b in blocks:
        if b.type not in TOP_LABELS:
            raise ConfigError(f"Unsupported block type: blocks of type \"{b.type}\" are not expected here", b.line, b.file)
        if len(b.labels) != TOP_LABELS[b.type]:
            raise ConfigError(f"Invalid {b.type} block: expected {TOP_LABELS[b.type]} label(s), got {len(b.labels)}",
                              b.line, b.file)
        key = (b.type, *b.labels) if b.type not in ("locals", "terraform", "provider") else None
        if b.type == "provider":
            alias = Module([], {}).ev(b.attrs["alias"], {}) if "alias" in b.attrs else None
            key = ("provider", b.labels[0], alias)
        if key in seen:
            raise ConfigError(f"Duplicate {b.type} \"{'.'.join(str(x) for x in key[1:] if x)}\"", b.line, b.file)
        if key:
            seen[key] = b
        if b.type == "variable" and "type" in b.attrs:
            t = unwrap(b.attrs["type"])
            if isinstance(t, Tree) and t.data == "string":
                raise ConfigError("Invalid quoted type constraints: remove the quotes around the type", b.line, b.file)
        if b.type in ("resource", "data") and "count" in b.attrs and "for_each" in b.attrs:
            raise ConfigError("Invalid combination of \"count\" and \"for_each\"", b.line, b.file)
        if b.type == "resource" and "depends_on" in b.attrs:
            d = unwrap(b.attrs["depends_on"])
            if not (isinstance(d, Tree) and d.data == "tuple"):
                raise ConfigError("Invalid expression: a static list expression is required for depends_on",
                                  b.line, b.file)
        if b.type == "module" and "source" in b.attrs:
            src = Module([], {}).ev(b.attrs["source"], {})
            if isinstance(src, str) and src.startswith(("./", "../")):
                if not (folder / src).is_dir():
                    raise ConfigError(f"Unreadable module directory: {src}", b.line, b.file)
            elif isinstance(src, str) and re.match(r"^[\w-]+/[\w-]+/[\w-]+$", src):
                raise ConfigError(f"Module not installed: registry module {src} cannot be downloaded offline",
                                  b.line, b.file)
            else:
                raise ConfigError(f"Invalid module source address \"{src}\" (a local path starts with ./)",
                                  b.line, b.file)
        if b.type == "terraform":
            for rp in b.sub("required_providers"):
                for name, node in rp.attrs.items():
                    spec = Module([], {}).ev(node, {})
                    source = spec.get("source", f"hashicorp/{name}") if isinstance(spec, dict) else f"hashicorp/{name}"
                    if source.lower() not in ("hashicorp/aws", AWS):
                        raise ConfigError(f"Missing required provider {source}: only hashicorp/aws is available offline",
                                          rp.line, rp.file)
                    version = spec.get("version") if isinstance(spec, dict) else spec if isinstance(spec, str) else None
                    if isinstance(version, str) and not any(
                            constraint_ok(version, v) for v in ("5.0.0", "5.50.0", "5.100.0", "5.999.0")):
                        raise ConfigError(f"provider hashicorp/aws constraint '{version}' excludes every 5.x release",
                                          rp.line, rp.file)
        if b.type in ("resource", "data") and b.labels and not b.labels[0].startswith("aws_") and \
                b.labels[0] not in ("terraform_data", "null_resource"):
            raise ConfigError(f"Missing required provider for {b.labels[0]}: only hashicorp/aws is available offline",
                              b.line, b.file)
        dynamic_problems(b)
        counted = "count" in b.attrs
        each = "for_each" in b.attrs
        for node, where, in_dynamic in walk_expressions(b):
            for ref in references(node, where):
                root, _, rest = ref.partition(".")
                first = re.split(r"[.\[]", rest)[0] if rest else ""
                if root == "var" and first not in declared_vars:
                    raise ConfigError(f"Reference to undeclared input variable: var.{first}", line_of(node) or b.line, b.file)
                if root == "local" and first not in declared_locals:
                    raise ConfigError(f"Reference to undeclared local value: local.{first}", line_of(node) or b.line, b.file)
                if root == "module" and first not in modules:
                    raise ConfigError(f"Reference to undeclared module: module.{first}", line_of(node) or b.line, b.file)
                # (inside dynamic blocks terraform validate lets these through; the plan rejects them)
                if root == "count" and not in_dynamic and not (counted and b.type in ("resource", "data", "module")):
                    raise ConfigError("Reference to \"count\" in non-counted context", line_of(node) or b.line, b.file)
                if root == "each" and not in_dynamic and not (each and b.type in ("resource", "data", "module")):
                    raise ConfigError("Reference to \"each\" in context without for_each", line_of(node) or b.line, b.file)
                if root == "data":
                    parts = rest.split(".")
                    if len(parts) >= 2 and (parts[0], re.split(r"\[", parts[1])[0]) not in datas:
                        raise ConfigError(f"Reference to undeclared resource: data.{parts[0]}.{parts[1]}",
                                          line_of(node) or b.line, b.file)
                if re.match(r"^[a-z0-9]+_[a-z0-9_]+$", root) and first and (root, first) not in resources:
                    raise ConfigError(f"Reference to undeclared resource: {root}.{first}", line_of(node) or b.line, b.file)


def dynamic_problems(block):
    """dynamic blocks: one label, for_each (and optional iterator/labels) plus exactly one content block."""
    for sub in block.blocks:
        if sub.type == "dynamic":
            if len(sub.labels) != 1:
                raise ConfigError("Invalid dynamic block: one label (the block type to generate) is required",
                                  sub.line, sub.file)
            if "for_each" not in sub.attrs:
                raise ConfigError("Missing required argument: \"for_each\" in dynamic block", sub.line, sub.file)
            extra = [a for a in sub.attrs if a not in ("for_each", "iterator", "labels")]
            if extra:
                raise ConfigError(f"Unsupported argument: \"{extra[0]}\" in dynamic block", sub.line, sub.file)
            other = [x for x in sub.blocks if x.type != "content"]
            if other:
                raise ConfigError(f"Unsupported block type: blocks of type \"{other[0].type}\" are not expected "
                                  "in a dynamic block", other[0].line, other[0].file)
            if len(sub.sub("content")) != 1:
                raise ConfigError("Missing required block: a dynamic block needs exactly one content block",
                                  sub.line, sub.file)
            for content in sub.sub("content"):
                dynamic_problems(content)
        else:
            dynamic_problems(sub)


def walk_expressions(block, bound=frozenset(), in_dynamic=False):
    """(expression node, names bound there, inside a dynamic block) for every attribute of a block."""
    for key, node in block.attrs.items():
        yield node, bound, in_dynamic
    for sub in block.blocks:
        if sub.type == "dynamic" and sub.labels:
            iterator = sub.labels[0]
            if "iterator" in sub.attrs:
                iterator = name_of(unwrap(sub.attrs["iterator"]))
            for key, node in sub.attrs.items():
                yield node, bound, in_dynamic
            for content in sub.sub("content"):
                yield from walk_expressions(content, bound | {iterator}, True)
        else:
            yield from walk_expressions(sub, bound, in_dynamic)


# --- arguments and blocks against a schema snapshot (make_schema.py) -----------------------------

def load_schema(path):
    import gzip
    try:
        with gzip.open(path, "rb") as f:
            return json.loads(f.read())
    except (OSError, ValueError, TypeError):
        return None


def literal(node):
    """(True, value) for a constant expression without references or calls, else (False, None)."""
    if references(node) or has_call(node):
        return False, None
    value = Module([], {}).ev(node, {})
    return (not has_unknown(value)), value


def type_error(want, value):
    """Why a literal cannot convert to a schema type (Terraform's wording), or ''."""
    if value is None or want == "dynamic":
        return ""
    kind = want if isinstance(want, str) else want[0]
    if kind == "bool":
        ok = isinstance(value, bool) or value in ("true", "false")
        return "" if ok else "a bool is required"
    if kind == "number":
        ok = (isinstance(value, (int, float)) and not isinstance(value, bool)) or (
            isinstance(value, str) and re.fullmatch(r"-?\d+(\.\d+)?([eE][-+]?\d+)?", value))
        return "" if ok else "a number is required"
    if kind == "string":
        return "string required" if isinstance(value, (dict, list)) else ""
    if kind in ("list", "set"):
        if not isinstance(value, list):
            return f"{kind} of {want[1] if isinstance(want[1], str) else want[1][0]} required"
        return next((f"element {i}: {e}" for i, v in enumerate(value) if (e := type_error(want[1], v))), "")
    if kind == "map":
        if not isinstance(value, dict):
            return f"map of {want[1] if isinstance(want[1], str) else want[1][0]} required"
        return next((f"element {k!r}: {e}" for k, v in value.items() if (e := type_error(want[1], v))), "")
    if kind == "object":
        return "" if isinstance(value, dict) else "object required"
    return ""


def check_against(block, schema, what, top=False):
    attrs, blocks = schema.get("a", {}), schema.get("b", {})
    skip_attrs = META if top else set()
    if what == "provider":
        skip_attrs = {"alias", "version"}
    for name, node in block.attrs.items():
        if name in skip_attrs:
            continue
        if name not in attrs:
            hint = (f" Did you mean to define a block of type \"{name}\"?" if name in blocks else "")
            raise ConfigError(f"Unsupported argument: An argument named \"{name}\" is not expected here.{hint}",
                              line_of(node) or block.line, block.file)
        type_, flags = attrs[name]
        if "o" not in flags and "r" not in flags:
            raise ConfigError(f"Value for unconfigurable attribute: can't configure a value for \"{name}\": "
                              "its value will be decided automatically", line_of(node) or block.line, block.file)
        is_literal, value = literal(node)
        problem = type_error(type_, value) if is_literal else ""
        if problem:
            raise ConfigError(f"Incorrect attribute value type: Inappropriate value for attribute \"{name}\": "
                              f"{problem}.", line_of(node) or block.line, block.file)
    counts = {}
    dynamic_types = set()

    def as_blocks(name):
        """Schema of an 'attribute as blocks' (list/set of objects, e.g. security group ingress), or None."""
        t = attrs.get(name, [None])[0]
        if isinstance(t, list) and t[0] in ("list", "set") and isinstance(t[1], list) and t[1][0] == "object":
            return {"a": {k: [v, "o"] for k, v in t[1][1].items()}}
        return None

    for sub in block.blocks:
        if top and sub.type in ("lifecycle", "provisioner", "connection"):
            continue
        if sub.type == "dynamic" and sub.labels:
            target = sub.labels[0]
            inner = blocks[target][3] if target in blocks else as_blocks(target)
            if inner is None:
                raise ConfigError(f"Unsupported block type: Blocks of type \"{target}\" are not expected here.",
                                  sub.line, sub.file)
            dynamic_types.add(target)
            for content in sub.sub("content"):
                check_against(content, inner, what)
            continue
        if sub.type not in blocks and as_blocks(sub.type) is not None:
            check_against(sub, as_blocks(sub.type), what)
            continue
        if sub.type not in blocks:
            hint = (f" Did you mean to define argument \"{sub.type}\"? If so, use the equals sign to assign it a value."
                    if sub.type in attrs else "")
            raise ConfigError(f"Unsupported block type: Blocks of type \"{sub.type}\" are not expected here.{hint}",
                              sub.line, sub.file)
        counts[sub.type] = counts.get(sub.type, 0) + 1
        check_against(sub, blocks[sub.type][3], what)
    for name, (type_, flags) in sorted(attrs.items()):
        if "r" in flags and name not in block.attrs:
            raise ConfigError(f"Missing required argument: The argument \"{name}\" is required, but no definition "
                              "was found.", block.line, block.file)
    for name, (mode, low, high, _) in sorted(blocks.items()):
        n = counts.get(name, 0)
        if high and n > high:
            raise ConfigError(f"Too many {name} blocks: no more than {high} \"{name}\" blocks are allowed",
                              block.line, block.file)
        if low and n < low and name not in dynamic_types:
            raise ConfigError(f"Insufficient {name} blocks: at least {low} \"{name}\" block(s) required",
                              block.line, block.file)


def schema_problems(blocks, schema):
    """Arguments, nested blocks and literal types of aws resources, data sources and provider blocks."""
    if not schema:
        return
    for b in blocks:
        if b.type in ("resource", "data") and len(b.labels) == 2 and b.labels[0].startswith("aws_"):
            table = schema["resource" if b.type == "resource" else "data"]
            if b.labels[0] not in table:
                kind = "resource" if b.type == "resource" else "data source"
                raise ConfigError(f"Invalid {kind} type: the provider hashicorp/aws does not support {kind} type "
                                  f"\"{b.labels[0]}\"", b.line, b.file)
            check_against(b, table[b.labels[0]], b.type, top=True)
        elif b.type == "provider" and b.labels == ["aws"]:
            check_against(b, schema["provider"], "provider")


def constraint_ok(constraint, version):
    from run_terraform import version_ok
    return version_ok(constraint, version)


# --- the fallback judge ----------------------------------------------------------------------------

def judge(files, job, aux: Path) -> dict:
    report = {"judge": "python-hcl2", "steps": [{"cmd": "python-hcl2 parse + Terraform language checks", "exit": 0}]}
    folder = Path(".")
    schema = load_schema(job.get("schema")) if job.get("schema") else None
    try:
        blocks = parse_files(files)
        language_problems(blocks, folder)
        schema_problems(blocks, schema)
    except ConfigError as e:
        report["steps"][0]["exit"] = 1
        report["syntax"] = {"ok": False, "diagnostics": e.text()}
        return report
    checked = (f"arguments checked against the hashicorp/aws {schema.get('provider_version')} schema snapshot"
               if schema else "provider schema not checked")
    report["syntax"] = {"ok": True, "diagnostics": f"HCL parses and Terraform language checks pass ({checked})"}
    try:
        plan = pseudo_plan(blocks, job.get("vars") or {}, folder)
    except ConfigError as e:
        if e.static:         # a type error terraform validate would report (e.g. an attribute of a list)
            report["steps"][0]["exit"] = 1
            report["syntax"] = {"ok": False, "diagnostics": e.text()}
            return report
        report["plan"] = {"ok": False, "diagnostics": e.text()}
        return report
    (aux / "plan.json").write_text(json.dumps(plan, indent=1, sort_keys=True, default=lambda v: None), encoding="utf-8")
    report["plan"] = {"ok": True, "diagnostics": f"pseudo plan: {len(plan['resource_changes'])} resource instance(s)"}
    return report


def pseudo_plan(blocks, given, folder):
    variables = variable_values(blocks, given)
    missing = [k for k, v in variables.items() if v is UNKNOWN and k not in given]
    if missing:
        raise ConfigError(f"No value for required variable: {missing[0]}", static=False)
    root = Module(blocks, variables, folder=folder)
    for key in list(root.resources):
        root.resource("managed", *key)
    for name in list(root.module_blocks):
        root.module(name)
    outputs = {b.labels[0]: root.ev(b.attrs["value"], {}) for b in blocks
               if b.type == "output" and b.labels and "value" in b.attrs}
    config = module_config(blocks, folder)
    provider = {"name": "aws", "full_name": AWS, "expressions": {}}
    for b in blocks:
        if b.type == "terraform":
            for rp in b.sub("required_providers"):
                spec = root.ev(rp.attrs["aws"], {}) if "aws" in rp.attrs else None
                if isinstance(spec, dict) and spec.get("version"):
                    provider["version_constraint"] = spec["version"]
        if b.type == "provider" and b.labels == ["aws"] and "alias" not in b.attrs:
            provider["expressions"] = block_expressions(b)
    config["provider_config"] = {"aws": provider}
    changes = sorted(root.changes, key=lambda c: c["address"])
    return {
        "dslbench_pseudo_plan": True,
        "format_version": "1.2",
        "variables": {k: {"value": known_part(v)} for k, v in variables.items()},
        "resource_changes": changes,
        "planned_values": {"outputs": {k: {"value": known_part(v), "sensitive": False} for k, v in outputs.items()
                                       if not has_unknown(v)},
                           "root_module": {"resources": [{"address": c["address"], "type": c["type"], "name": c["name"],
                                                          "values": c["change"]["after"]} for c in changes]}},
        "output_changes": {k: {"actions": ["create"], "after": known_part(v),
                               "after_unknown": unknown_mask(v)} for k, v in outputs.items()},
        "configuration": {"provider_config": config.pop("provider_config"), "root_module": config},
    }
