"""Cypher: query text helpers (literals and comments blanked, top-level clauses, ORDER BY of the last
RETURN) and what tells Neo4j 5 Cypher from what FalkorDB accepts: forms Neo4j 5 removed, and the Neo4j 5
constructs FalkorDB does not implement (an engine gap, not the program's error).
"""
from __future__ import annotations

import re


def code_only(text: str) -> str:
    """The query with string literals, quoted identifiers and comments blanked (same length)."""
    out, i, n = list(text), 0, len(text)
    while i < n:
        c = text[i]
        if c in "'\"`":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" and c != "`" else 1
            for k in range(i + 1, min(j, n)):
                out[k] = " "
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            for k in range(i, j):
                out[k] = " "
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            for k in range(i, j):
                out[k] = " " if text[k] != "\n" else "\n"
            i = j
        else:
            i += 1
    return "".join(out)


def _top_level(code: str) -> str:
    """Blank everything nested inside (), [] or {} so that only top-level clauses remain."""
    out, depth = [], 0
    for c in code:
        if c in "([{":
            depth += 1
            out.append(" ")
        elif c in ")]}":
            depth = max(0, depth - 1)
            out.append(" ")
        else:
            out.append(c if depth == 0 else " ")
    return "".join(out)


def ends_with_order_by(query: str) -> bool:
    """Does the query's last top-level RETURN carry an ORDER BY (so that row order is specified)?"""
    top = _top_level(code_only(query))
    returns = [m.end() for m in re.finditer(r"\bRETURN\b", top, re.I)]
    return bool(returns) and re.search(r"\bORDER\s+BY\b", top[returns[-1]:], re.I) is not None


def strip_query(program: str) -> str:
    """The query as sent to the engine: surrounding blanks and one trailing semicolon removed."""
    q = program.strip()
    return q[:-1].rstrip() if q.endswith(";") else q


# Forms Neo4j 5 removed but FalkorDB still accepts: rejected here so the judge stays Neo4j 5 Cypher.
NEO4J5_REMOVED = [
    (re.compile(r"\bexists\s*\(\s*[A-Za-z_][\w]*\s*\.\s*[A-Za-z_`][\w`]*\s*\)", re.I),
     "exists(variable.property) was removed in Neo4j 5; use `variable.property IS NOT NULL`"),
    (re.compile(r"\bsize\s*\(\s*\(\s*[A-Za-z_]?\w*\s*(?::\s*\w+\s*)*(?:\{[^}]*\})?\s*\)\s*<?-", re.I),
     "size() of a pattern expression was removed in Neo4j 5; use COUNT { pattern } or a pattern comprehension"),
]

# Neo4j 5 built-in functions (lower case). FalkorDB reporting one of them as unknown is a gap of the
# engine, not an error of the program.
NEO4J5_FUNCTIONS = set("""
abs acos all any asin atan atan2 avg ceil char_length character_length coalesce collect cos cot count
date date.realtime date.statement date.transaction date.truncate datetime datetime.fromepoch
datetime.fromepochmillis datetime.realtime datetime.statement datetime.transaction datetime.truncate
degrees duration duration.between duration.indays duration.inmonths duration.inseconds e elementid endnode
exp floor haversin head id isempty isnan keys labels last left length localdatetime
localdatetime.realtime localdatetime.statement localdatetime.transaction localdatetime.truncate localtime
localtime.realtime localtime.statement localtime.transaction localtime.truncate log log10 ltrim max min
nodes none normalize nullif percentilecont percentiledisc pi point point.distance point.withinbbox
properties radians rand randomuuid range reduce relationships replace reverse right round rtrim sign sin
single size split sqrt startnode stdev stdevp substring sum tail tan time time.realtime time.statement
time.transaction time.truncate timestamp toboolean tobooleanlist tobooleanornull tofloat tofloatlist
tofloatornull tointeger tointegerlist tointegerornull tolower tostring tostringlist tostringornull toupper
trim type valuetype btrim
""".split())


def repeated_relationship_types(query: str) -> list[str]:
    """Relationship types used twice in one MATCH clause (fixed-length hops). Neo4j never binds one
    relationship twice within a pattern; FalkorDB can, so such queries may differ between the two."""
    top = code_only(query)
    found = []
    for clause in re.split(r"\b(?=(?:OPTIONAL\s+)?MATCH\b|WITH\b|RETURN\b|WHERE\b|UNWIND\b|CALL\b|"
                           r"CREATE\b|MERGE\b|SET\b|DELETE\b|DETACH\b)", top, flags=re.I):
        if not re.match(r"(OPTIONAL\s+)?MATCH\b", clause.strip(), re.I):
            continue
        types = re.findall(r"\[\s*\w*\s*:\s*([A-Za-z_]\w*)\s*(?:\{[^}]*\})?\s*\]", clause)
        found += sorted({t for t in types if types.count(t) > 1})
    return found


def _parse_error_offset(message: str) -> int | None:
    m = re.search(r"offset: (\d+)", message)
    return int(m.group(1)) if m else None


# (text before the parse-error offset, text from the offset, construct): Neo4j 5 syntax FalkorDB's parser lacks.
PARSE_GAPS = [
    (r"\b(COUNT|EXISTS|COLLECT)\s*\{\s*((OPTIONAL\s+)?MATCH\s*)?$", r"", "COUNT/EXISTS/COLLECT { } subqueries"),
    (r"\bCALL\s*$", r"\(", "scoped CALL (variables) { } subqueries"),
    (r"\bIS\s*(NOT\s*)?$", r"(::|TYPED\b)", "type predicate expressions (IS :: TYPE)"),
    (r"", r"NULLS\s+(FIRST|LAST)\b", "NULLS FIRST/LAST ordering"),
    (r"[(\[]\s*\w*\s*:[\w`:\s|]*$", r"[&|!%]", "label expressions with &, |, ! or %"),
    (r"(\]\s*-\s*>?|\))\s*$", r"(\+|\*|\{\s*\d)", "quantified path patterns"),
]


def falkordb_gap(query: str, message: str) -> str | None:
    """If FalkorDB rejected valid Neo4j 5 Cypher it does not implement, name the construct."""
    code = code_only(query)
    offset = _parse_error_offset(message)
    if offset is not None and "Invalid input" in message:
        before, after = code[:offset], code[offset:]
        for b, a, name in PARSE_GAPS:
            if re.search(b, before, re.I) and re.match(a, after, re.I):
                return name
    fixed = {"does not currently support =~": "regular-expression matching (=~)",
             "only supports shortestPaths in WITH or RETURN": "shortestPath() in MATCH",
             "does not currently support undirected shortestPath": "undirected shortestPath()",
             "Source and destination must already be resolved to call allShortestPaths": "allShortestPaths() in this form",
             "arguments to function 'round'": "round() with a precision argument"}
    for needle, name in fixed.items():
        if needle in message:
            return name
    m = re.search(r"Unable to resolve filtered alias '(.*)'", message)
    if m:   # FalkorDB cannot evaluate some patterns inside WHERE expressions that Neo4j 5 accepts
        alias = m.group(1)
        if alias.startswith("[") and "|" in alias:
            return "pattern comprehensions inside WHERE"
        if re.search(r"\)\s*<?-", alias):
            pos = query.find(alias)
            before = query[:pos] if pos > 0 else ""
            named = re.findall(r"[(\[]\s*([A-Za-z_]\w*)\s*[:){\]]", alias)
            if all(re.search(rf"\b{re.escape(v)}\b", before) for v in named):   # no new variables
                return "exists(pattern) / pattern predicates inside WHERE expressions"
        return None
    if re.search(r"Type mismatch: expected .* but was Path", message) and \
            re.search(r"\[\s*[A-Za-z_]\w*\s*(:[^\]]*)?\*", code):
        # Neo4j 5 binds a named variable-length relationship [r:T*] to a list of relationships;
        # FalkorDB binds it to a path, so list functions on it (size(r), r[0], IN r) fail there
        return "a variable-length relationship variable used as a list of relationships"
    m = re.search(r"Unknown function '([\w.]+)'", message)
    if m and m.group(1).lower() in NEO4J5_FUNCTIONS:
        return f"the Neo4j 5 function {m.group(1)}()"
    return None

