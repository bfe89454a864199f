"""Runs inside the sandbox: deploy compiled contracts on a fresh in-memory chain (py-evm, set up by
eth-tester's tester chain) and play the oracle's scenarios, writing the first mismatch per scenario.

usage: python run_sol.py SPEC.json REPORT.json

SPEC (written by validator.py): {"contract": main contract name, "scenarios": [...], "declares": {...},
  "reference": compiled gold (+ support contracts), "programs": {"gold": compiled, "candidate": compiled}}
where compiled = {"contracts": {name: {"abi": [...], "bytecode": hex}}, "declared": [...]}.
Interfaces (function/event/error/constructor signatures) are taken from the reference (the gold):
a program must have exactly those signatures. Every scenario starts on a new chain. Time is
deterministic: block k has timestamp GENESIS_TS + 12 k (plus `wait` steps).
"""
import json
import re
import sys
from collections import defaultdict

from eth.exceptions import Revert
from eth_abi import decode, encode
from eth_tester.backends.pyevm.main import get_default_genesis_params, setup_tester_chain
from eth_utils import keccak, to_checksum_address

GENESIS_TS = 1_700_000_000
BLOCK_TIME = 12
TX_GAS = 3_000_000
DEPLOY_GAS = 12_000_000
N_ACCOUNTS = 10
ERROR_SELECTOR = keccak(text="Error(string)")[:4]
PANIC_SELECTOR = keccak(text="Panic(uint256)")[:4]
UNITS = {"wei": 1, "gwei": 10**9, "ether": 10**18}


class Mismatch(Exception):
    """The program does not behave as the scenario expects. The message says what the program did;
    `expected` says what the scenario wanted (kept apart: it is not shown to the model by default)."""

    def __init__(self, message: str, expected: str = ""):
        super().__init__(message)
        self.expected = expected


class OracleError(Exception):
    """The scenario itself cannot be played (a task bug): shows up when the gold runs."""


# --- ABI helpers -----------------------------------------------------------------------------------

def abi_type(p: dict) -> str:
    t = p["type"]
    if t.startswith("tuple"):
        return "(" + ",".join(abi_type(c) for c in p.get("components", [])) + ")" + t[len("tuple"):]
    return t


def signature(entry: dict) -> str:
    return f'{entry.get("name", "")}({",".join(abi_type(p) for p in entry.get("inputs", []))})'


def out_types(entry: dict) -> str:
    return "(" + ",".join(abi_type(p) for p in entry.get("outputs", [])) + ")"


def entries(abi: list, kind: str) -> list:
    return [e for e in abi if e.get("type") == kind]


def array_of(p: dict):
    m = re.match(r"^(.*)\[(\d*)\]$", p["type"])
    if not m:
        return None, None
    return dict(p, type=m.group(1)), (int(m.group(2)) if m.group(2) else None)


def is_dynamic(p: dict) -> bool:
    return p["type"] in ("string", "bytes") or p["type"].endswith("]") or p["type"].startswith("tuple")


# --- values: oracle spec <-> ABI ---------------------------------------------------------------------

class Values:
    def __init__(self):
        self.refs: dict[str, bytes] = {"$zero": b"\0" * 20}

    def name_of(self, addr: bytes) -> str:
        for k, v in self.refs.items():
            if v == addr and k != "$zero":
                return k
        return "$zero" if addr == b"\0" * 20 else "0x" + addr.hex()

    def address(self, v) -> bytes:
        if isinstance(v, str) and v.startswith("$"):
            if v not in self.refs:
                raise OracleError(f"unknown reference {v}")
            return self.refs[v]
        if isinstance(v, str) and re.fullmatch(r"0x[0-9a-fA-F]{40}", v):
            return bytes.fromhex(v[2:])
        raise OracleError(f"{v!r} is not an address (use $0..$9, $contract, $zero, $<label> or 0x + 40 hex digits)")

    @staticmethod
    def integer(v) -> int:
        if isinstance(v, bool):
            raise OracleError(f"{v!r} is not an integer")
        if isinstance(v, int):
            return v
        m = re.fullmatch(r"\s*(-?\d+)\s*(wei|gwei|ether)\s*", v) if isinstance(v, str) else None
        if m:
            return int(m.group(1)) * UNITS[m.group(2)]
        raise OracleError(f"{v!r} is not an integer (or '<n> wei|gwei|ether')")

    def to_abi(self, p: dict, v):
        """Spec value -> the Python value eth-abi encodes for parameter p."""
        elem, n = array_of(p)
        t = p["type"]
        if elem is not None:
            if not isinstance(v, list) or (n is not None and len(v) != n):
                raise OracleError(f"{v!r} is not a list for {abi_type(p)}")
            return [self.to_abi(elem, x) for x in v]
        if t == "tuple":
            comps = p.get("components", [])
            if not isinstance(v, list) or len(v) != len(comps):
                raise OracleError(f"{v!r} is not a list of {len(comps)} values for {abi_type(p)}")
            return tuple(self.to_abi(c, x) for c, x in zip(comps, v))
        if t == "address":
            return to_checksum_address(self.address(v))
        if t == "bool":
            if not isinstance(v, bool):
                raise OracleError(f"{v!r} is not a bool")
            return v
        if t.startswith(("uint", "int")):
            return self.integer(v)
        if t.startswith("bytes"):
            if not isinstance(v, str) or not re.fullmatch(r"0x([0-9a-fA-F]{2})*", v):
                raise OracleError(f"{v!r} is not a 0x-prefixed hex byte string for {t}")
            b = bytes.fromhex(v[2:])
            if t != "bytes" and len(b) != int(t[5:]):
                raise OracleError(f"{v!r} is not {t[5:]} bytes long")
            return b
        if t == "string":
            if not isinstance(v, str):
                raise OracleError(f"{v!r} is not a string")
            return v
        raise OracleError(f"unsupported ABI type {t}")

    def canon(self, p: dict, v):
        """Decoded value -> comparable, JSON-friendly value."""
        elem, _ = array_of(p)
        if elem is not None:
            return [self.canon(elem, x) for x in v]
        if p["type"] == "tuple":
            return [self.canon(c, x) for c, x in zip(p.get("components", []), v)]
        if p["type"] == "address":
            return "0x" + bytes.fromhex(v[2:] if isinstance(v, str) else v.hex()).hex()
        if isinstance(v, bytes):
            return "0x" + v.hex()
        return v

    def expect(self, p: dict, v):
        return self.canon(p, self.to_abi(p, v))

    def show(self, p: dict, v) -> str:
        """A canonical value as the oracle would write it (addresses as $names)."""
        elem, _ = array_of(p)
        if elem is not None:
            return "[" + ", ".join(self.show(elem, x) for x in v) + "]"
        if p["type"] == "tuple":
            return "[" + ", ".join(self.show(c, x) for c, x in zip(p.get("components", []), v)) + "]"
        if p["type"] == "address":
            return self.name_of(bytes.fromhex(v[2:]))
        if isinstance(v, str) and p["type"] == "string":
            return json.dumps(v)
        if isinstance(v, bool):
            return "true" if v else "false"
        return str(v)

    def show_list(self, params, values) -> str:
        return "[" + ", ".join(self.show(p, v) for p, v in zip(params, values)) + "]"

    def show_call(self, name, params, values) -> str:
        return name + "(" + ", ".join(self.show(p, v) for p, v in zip(params, values)) + ")"


def short(text: str, n: int = 160) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


# --- chain -----------------------------------------------------------------------------------------

class Chain:
    def __init__(self):
        params = get_default_genesis_params({"timestamp": GENESIS_TS})
        self.keys, self.chain = setup_tester_chain(genesis_params=params, num_accounts=N_ACCOUNTS)
        self.accounts = [k.public_key.to_canonical_address() for k in self.keys]
        self.ts = GENESIS_TS + BLOCK_TIME
        self.fees = defaultdict(int)
        self.start = {a: self.balance(a) for a in self.accounts}

    def balance(self, addr: bytes) -> int:
        return self.chain.get_vm().state.get_balance(addr)

    def _signed(self, sender: int, to: bytes, data: bytes, value: int, gas: int):
        key = self.keys[sender]
        nonce = self.chain.get_vm().state.get_nonce(self.accounts[sender])
        price = self.chain.header.base_fee_per_gas
        tx = self.chain.create_unsigned_transaction(nonce=nonce, gas_price=price, gas=gas, to=to, value=value,
                                                    data=data)
        return tx.as_signed_transaction(key), price

    def transact(self, sender: int, to: bytes, data: bytes, value: int, gas: int = TX_GAS):
        self.chain.set_header_timestamp(self.ts)
        tx, price = self._signed(sender, to, data, value, gas)
        _, receipt, computation = self.chain.apply_transaction(tx)
        self.chain.mine_block()
        self.ts += BLOCK_TIME
        self.fees[self.accounts[sender]] += receipt.gas_used * price
        return receipt, computation

    def call(self, sender: int, to: bytes, data: bytes, value: int):
        self.chain.set_header_timestamp(self.ts)
        tx, _ = self._signed(sender, to, data, value, TX_GAS)
        state = self.chain.get_vm().state
        snapshot = state.snapshot()
        try:
            return state.apply_transaction(tx)
        finally:
            state.revert(snapshot)

    def mine(self, n: int):
        for _ in range(n):
            self.chain.set_header_timestamp(self.ts)
            self.chain.mine_block()
            self.ts += BLOCK_TIME


# --- one program through one scenario --------------------------------------------------------------

class Deployment:
    def __init__(self, name, address, abi, ref_abi):
        self.name, self.address, self.abi, self.ref_abi = name, address, abi, ref_abi


class Player:
    def __init__(self, spec: dict, program: dict):
        self.spec, self.program = spec, program
        self.ref = spec["reference"]["contracts"]
        self.support = spec.get("support", {}).get("contracts", {})
        self.chain = Chain()
        self.values = Values()
        for i, a in enumerate(self.chain.accounts):
            self.values.refs[f"${i}"] = a
        self.deployed: dict[str, Deployment] = {}
        self.by_address: dict[bytes, Deployment] = {}

    # -- lookups
    def artifact(self, name: str):
        """(program artifact, reference ABI) of a contract; support contracts are the same for both."""
        if name in self.support:
            return self.support[name], self.support[name]["abi"]
        if name not in self.ref:
            raise OracleError(f"the gold defines no contract {name}")
        contracts = self.program["contracts"]
        if name not in contracts:
            have = ", ".join(sorted(contracts)) or "none"
            raise Mismatch(f"contract {name} is not defined (the program defines: {have})")
        return contracts[name], self.ref[name]["abi"]

    def function(self, dep: Deployment, name: str):
        refs = [e for e in entries(dep.ref_abi, "function")
                if (signature(e) == name if "(" in name else e["name"] == name)]
        if not refs:
            raise OracleError(f"the gold's {dep.name} has no function {name}")
        if len(refs) > 1:
            raise OracleError(f"{name} is overloaded in the gold: name it by its full signature")
        ref = refs[0]
        sig = signature(ref)
        found = [e for e in entries(dep.abi, "function") if signature(e) == sig]
        if not found:
            same = sorted(signature(e) for e in entries(dep.abi, "function") if e["name"] == ref["name"])
            if same:
                raise Mismatch(f"{dep.name} has no function {ref['name']} with the specified parameter types "
                               f"(it has {', '.join(same)})", f"{dep.name} has a function {sig}")
            raise Mismatch(f"{dep.name} has no function {ref['name']}", f"{dep.name} has a function {sig}")
        fn = found[0]
        if out_types(fn) != out_types(ref):
            raise Mismatch(f"{sig} returns {out_types(fn)}, not the specified types", f"{sig} returns {out_types(ref)}")
        return ref, fn

    def target(self, step) -> Deployment:
        label = step.get("to", "contract")
        if label not in self.deployed:
            raise OracleError(f"nothing deployed as '{label}' yet")
        return self.deployed[label]

    # -- outcomes
    def failure(self, computation) -> dict:
        err = computation._error
        if not isinstance(err, Revert):
            return {"kind": "exception", "text": f"failed with {type(err).__name__} (no revert data)"}
        data = err.args[0] if err.args and isinstance(err.args[0], bytes) else b""
        if not data:
            return {"kind": "empty", "text": "reverted without data"}
        sel, body = data[:4], data[4:]
        try:
            if sel == ERROR_SELECTOR:
                reason = decode(["string"], body)[0]
                return {"kind": "reason", "reason": reason, "text": f"reverted with reason {json.dumps(reason)}"}
            if sel == PANIC_SELECTOR:
                code = decode(["uint256"], body)[0]
                return {"kind": "panic", "code": code, "text": f"reverted with Panic(0x{code:02x})"}
        except Exception:
            pass
        abis = [d.abi for d in self.deployed.values()] + [c["abi"] for c in self.program["contracts"].values()] \
            + [c["abi"] for c in self.support.values()]
        for abi in abis:
            for e in entries(abi, "error"):
                if keccak(text=signature(e))[:4] == sel:
                    try:
                        vals = [self.values.canon(p, v) for p, v in zip(e["inputs"], decode(
                            [abi_type(p) for p in e["inputs"]], body))]
                    except Exception:
                        continue
                    return {"kind": "error", "entry": e, "values": vals,
                            "text": f"reverted with {self.values.show_call(e['name'], e['inputs'], vals)}"}
        return {"kind": "unknown", "text": f"reverted with unrecognised data 0x{short(data.hex(), 80)}"}

    def error_entry(self, name: str):
        for c in self.ref.values():
            for e in entries(c["abi"], "error"):
                if e["name"] == name:
                    return e
        for c in self.support.values():
            for e in entries(c["abi"], "error"):
                if e["name"] == name:
                    return e
        raise OracleError(f"the gold declares no error {name}")

    def check_revert(self, want, computation, what: str):
        if computation.is_success:
            raise Mismatch(f"{what}: succeeded", f"{what}: a revert ({self.describe_want(want)})")
        got = self.failure(computation)
        if want is True:
            return
        if "reason" in want:
            if got["kind"] != "reason" or got["reason"] != want["reason"]:
                raise Mismatch(f"{what}: {got['text']}", f"{what}: revert reason {json.dumps(want['reason'])}")
        elif "panic" in want:
            if got["kind"] != "panic" or got["code"] != want["panic"]:
                raise Mismatch(f"{what}: {got['text']}", f"{what}: revert with Panic(0x{want['panic']:02x})")
        elif "error" in want:
            ref = self.error_entry(want["error"])
            if got["kind"] != "error" or got["entry"]["name"] != want["error"]:
                raise Mismatch(f"{what}: {got['text']}", f"{what}: revert with custom error {signature(ref)}")
            if signature(got["entry"]) != signature(ref):
                raise Mismatch(f"{what}: error declared as {signature(got['entry'])}, not as specified",
                               f"{what}: error declared as {signature(ref)}")
            if "args" in want:
                if len(want["args"]) != len(ref["inputs"]):
                    raise OracleError(f"error {want['error']} takes {len(ref['inputs'])} arguments")
                exp = [self.values.expect(p, v) for p, v in zip(ref["inputs"], want["args"])]
                if exp != got["values"]:
                    raise Mismatch(f"{what}: {got['text']}",
                                   f"{what}: revert with {self.values.show_call(want['error'], ref['inputs'], exp)}")

    @staticmethod
    def describe_want(want) -> str:
        if want is True:
            return "any"
        if "reason" in want:
            return f"reason {json.dumps(want['reason'])}"
        if "panic" in want:
            return f"Panic(0x{want['panic']:02x})"
        return f"error {want['error']}"

    def expect_success(self, computation, what: str):
        if not computation.is_success:
            raise Mismatch(f"{what}: {self.failure(computation)['text']}")

    def check_returns(self, fn, ref, computation, want, what: str):
        params = ref["outputs"]
        if len(want) != len(params):
            raise OracleError(f"{what}: returns lists {len(want)} values, the function returns {len(params)}")
        try:
            got = [self.values.canon(p, v) for p, v in zip(params, decode([abi_type(p) for p in params],
                                                                            computation.output))]
        except Exception as e:
            raise Mismatch(f"{what}: return data does not decode as {out_types(ref)} ({type(e).__name__})")
        exp = [self.values.expect(p, v) for p, v in zip(params, want)]
        if got != exp:
            raise Mismatch(f"{what}: returned {self.values.show_list(params, got)}",
                           f"{what}: expected {self.values.show_list(params, exp)}")

    def decode_log(self, log):
        dep = self.by_address.get(log.address)
        if dep is None or not log.topics:
            return None, None, None
        topic0 = log.topics[0].to_bytes(32, "big") if isinstance(log.topics[0], int) else bytes(log.topics[0])
        for e in entries(dep.abi, "event"):
            if e.get("anonymous") or keccak(text=signature(e)) != topic0:
                continue
            params = e["inputs"]
            plain = [p for p in params if not p.get("indexed")]
            try:
                data_vals = iter(decode([abi_type(p) for p in plain], log.data))
                topics = iter(log.topics[1:])
                vals = []
                for p in params:
                    if p.get("indexed"):
                        t = next(topics)
                        raw = t.to_bytes(32, "big") if isinstance(t, int) else bytes(t)
                        vals.append(("hash", "0x" + raw.hex()) if is_dynamic(p)
                                    else self.values.canon(p, decode([abi_type(p)], raw)[0]))
                    else:
                        vals.append(self.values.canon(p, next(data_vals)))
            except Exception:
                return dep, e, None
            return dep, e, vals
        return dep, None, None

    def event_ref(self, dep: Deployment, name: str):
        found = [e for e in entries(dep.ref_abi, "event") if e["name"] == name]
        if not found:
            for c in list(self.ref.values()) + list(self.support.values()):
                found += [e for e in entries(c["abi"], "event") if e["name"] == name]
        if not found:
            raise OracleError(f"the gold declares no event {name}")
        return found[0]

    def check_events(self, receipt, want: list, what: str):
        got = []
        for log in receipt.logs:
            dep, entry, vals = self.decode_log(log)
            got.append((dep, entry, vals))
        names = [e["name"] if e else "<unknown event>" for _, e, _ in got]
        if len(got) != len(want) or any(n != w[0] for n, w in zip(names, want)):
            raise Mismatch(f"{what}: emitted [{', '.join(names)}]",
                           f"{what}: expected events [{', '.join(w[0] for w in want)}]")
        for i, ((dep, entry, vals), w) in enumerate(zip(got, want)):
            ref = self.event_ref(dep, w[0])
            flags = [bool(p.get("indexed")) for p in entry["inputs"]]
            ref_flags = [bool(p.get("indexed")) for p in ref["inputs"]]
            if signature(entry) != signature(ref) or flags != ref_flags:
                def decl(e):
                    return e["name"] + "(" + ",".join(abi_type(p) + (" indexed" if p.get("indexed") else "")
                                                      for p in e["inputs"]) + ")"
                raise Mismatch(f"{what}: event declared as {decl(entry)}, not as specified",
                               f"{what}: event declared as {decl(ref)}")
            if vals is None:
                raise Mismatch(f"{what}: event {w[0]} data does not decode")
            args = w[1:]
            if len(args) != len(ref["inputs"]):
                raise OracleError(f"{what}: event {w[0]} has {len(ref['inputs'])} arguments, expected lists "
                                  f"{len(args)}")
            for j, (p, v, a) in enumerate(zip(ref["inputs"], vals, args)):
                if isinstance(v, tuple):  # indexed dynamic value: only its hash is logged
                    if p["type"] == "string" and isinstance(a, str):
                        expected_hash = "0x" + keccak(text=a).hex()
                    elif p["type"] == "bytes":
                        expected_hash = "0x" + keccak(self.values.to_abi(p, a)).hex()
                    else:
                        raise OracleError(f"{what}: indexed {p['type']} event arguments cannot be compared")
                    if v[1] != expected_hash:
                        raise Mismatch(f"{what}: event {i} ({w[0]}) argument {j}: the logged hash differs",
                                       f"{what}: event {i} ({w[0]}) argument {j}: expected the hash of {a!r}")
                    continue
                exp = self.values.expect(p, a)
                if v != exp:
                    shown = [self.values.show(q, x) if not isinstance(x, tuple) else "<hash>"
                             for q, x in zip(ref["inputs"], vals)]
                    raise Mismatch(f"{what}: event {w[0]}({', '.join(shown)}), argument {j} differs",
                                   f"{what}: expected event {w[0]} argument {j} = {self.values.show(p, exp)}")

    # -- steps
    def encode_call(self, ref, fn, args, what):
        if len(args) != len(ref["inputs"]):
            raise OracleError(f"{what}: {signature(ref)} takes {len(ref['inputs'])} arguments, got {len(args)}")
        values = [self.values.to_abi(p, a) for p, a in zip(ref["inputs"], args)]
        return keccak(text=signature(fn))[:4] + encode([abi_type(p) for p in ref["inputs"]], values)

    def who(self, step) -> int:
        return int(step.get("from", 0))

    def value(self, step) -> int:
        return self.values.integer(step.get("value", 0))

    def step_deploy(self, step, what):
        name = step.get("contract", self.spec["contract"])
        label = step.get("as", "contract")
        art, ref_abi = self.artifact(name)
        if not art.get("bytecode"):
            raise Mismatch(f"{what}: {name} has no bytecode (abstract contract or interface?)")
        ref_ctor = (entries(ref_abi, "constructor") or [{"inputs": []}])[0]
        ctor = (entries(art["abi"], "constructor") or [{"inputs": []}])[0]
        types = [abi_type(p) for p in ref_ctor["inputs"]]
        if [abi_type(p) for p in ctor["inputs"]] != types:
            raise Mismatch(f"{what}: constructor takes ({','.join(abi_type(p) for p in ctor['inputs'])}), not the "
                           f"specified types", f"{what}: constructor takes ({','.join(types)})")
        args = step["deploy"]
        if len(args) != len(types):
            raise OracleError(f"{what}: the constructor takes {len(types)} arguments, got {len(args)}")
        data = bytes.fromhex(art["bytecode"]) + encode(types, [self.values.to_abi(p, a)
                                                                for p, a in zip(ref_ctor["inputs"], args)])
        receipt, comp = self.chain.transact(self.who(step), b"", data, self.value(step), DEPLOY_GAS)
        if "reverts" in step:
            self.check_revert(step["reverts"], comp, what)
            return
        self.expect_success(comp, what)
        dep = Deployment(name, comp.msg.storage_address, art["abi"], ref_abi)
        self.deployed[label] = dep
        self.by_address[dep.address] = dep
        self.values.refs["$" + label] = dep.address
        if "events" in step:
            self.check_events(receipt, step["events"], what)

    def step_function(self, step, what, kind):
        dep = self.target(step)
        ref, fn = self.function(dep, step[kind])
        data = self.encode_call(ref, fn, step.get("args", []), what)
        if kind == "call":
            comp = self.chain.call(self.who(step), dep.address, data, self.value(step))
            receipt = None
        else:
            receipt, comp = self.chain.transact(self.who(step), dep.address, data, self.value(step))
        if "reverts" in step:
            self.check_revert(step["reverts"], comp, what)
            return
        self.expect_success(comp, what)
        if "returns" in step:
            self.check_returns(fn, ref, comp, step["returns"], what)
        if "events" in step:
            self.check_events(receipt, step["events"], what)

    def step_send(self, step, what):
        dep = self.target(step)
        data = self.values.to_abi({"type": "bytes"}, step.get("data", "0x"))
        receipt, comp = self.chain.transact(self.who(step), dep.address, data, self.values.integer(step["send"]))
        if "reverts" in step:
            self.check_revert(step["reverts"], comp, what)
            return
        self.expect_success(comp, what)
        if "returns" in step:  # the raw return data
            want = self.values.to_abi({"type": "bytes"}, step["returns"])
            if comp.output != want:
                raise Mismatch(f"{what}: returned data 0x{short(comp.output.hex(), 80)}",
                               f"{what}: expected data 0x{short(want.hex(), 80)}")
        if "events" in step:
            self.check_events(receipt, step["events"], what)

    def step_balance(self, step, what, kind):
        addr = self.values.address(step[kind])
        have = self.chain.balance(addr)
        if kind == "balance_change":
            have = have + self.chain.fees.get(addr, 0) - self.chain.start.get(addr, 0)
        want = self.values.integer(step["equals"])
        if have != want:
            label = "balance change (gas fees excluded)" if kind == "balance_change" else "balance"
            raise Mismatch(f"{what}: {label} of {step[kind]} is {have} wei", f"{what}: expected {want} wei")

    def play(self, scenario) -> dict:
        for i, step in enumerate(scenario["steps"], 1):
            kind = next(k for k in ("deploy", "call", "transact", "send", "balance", "balance_change", "mine",
                                    "wait") if k in step)
            who = f" from ${self.who(step)}" if kind in ("deploy", "call", "transact", "send") else ""
            what = f"step {i} ({kind} {step[kind]}{who})" if kind != "deploy" else \
                f"step {i} (deploy {step.get('contract', self.spec['contract'])}{who})"
            try:
                if kind == "deploy":
                    self.step_deploy(step, what)
                elif kind in ("call", "transact"):
                    self.step_function(step, what, kind)
                elif kind == "send":
                    self.step_send(step, what)
                elif kind in ("balance", "balance_change"):
                    self.step_balance(step, what, kind)
                elif kind == "mine":
                    self.chain.mine(int(step["mine"]))
                elif kind == "wait":
                    self.chain.ts += int(step["wait"])
            except Mismatch as e:
                return {"name": scenario["name"], "ok": False, "steps": i, "mismatch": short(str(e), 400),
                        "expected": short(e.expected, 400)}
            except OracleError as e:
                return {"name": scenario["name"], "ok": False, "steps": i, "oracle_error": short(f"{what}: {e}", 400)}
            except RecursionError:
                return {"name": scenario["name"], "ok": False, "steps": i,
                        "mismatch": f"{what}: the EVM run exceeded the interpreter's recursion limit (deep call chain)"}
            except Exception as e:  # the EVM rejected what the program did in a way py-evm reports as an exception
                return {"name": scenario["name"], "ok": False, "steps": i,
                        "mismatch": short(f"{what}: the EVM run raised {type(e).__name__}: {e}", 400)}
        return {"name": scenario["name"], "ok": True, "steps": len(scenario["steps"])}


def check_declares(spec: dict, program: dict) -> tuple[str | None, str]:
    """(the first structure problem or None, what the specification wants there)."""
    declared = {d["name"]: d for d in program.get("declared", [])}
    for name, want in (spec.get("declares") or {}).items():
        d = declared.get(name)
        if d is None:
            return f"{name} is not declared", f"{name} is declared"
        if "kind" in want and d["kind"] != want["kind"]:
            return f"{name} is declared as a {d['kind']}, not the specified kind", f"{name} is a {want['kind']}"
        if "abstract" in want and d["abstract"] != want["abstract"]:
            return (f"{name} is {'' if d['abstract'] else 'not '}abstract, unlike the specification",
                    f"{name} must {'' if want['abstract'] else 'not '}be abstract")
        missing = [b for b in want.get("inherits", []) if b not in d["inherits"]]
        if missing:
            return (f"{name} does not inherit from every required base (it inherits from: "
                    f"{', '.join(d['inherits']) or 'nothing'})", f"{name} inherits from {', '.join(missing)}")
    return None, ""


def run_program(spec: dict, program: dict) -> dict:
    problem, expected = check_declares(spec, program)
    if problem:
        return {"declares": problem, "declares_expected": expected, "scenarios": []}
    results = []
    for scenario in spec["scenarios"]:
        results.append(Player(spec, program).play(scenario))
    return {"declares": None, "scenarios": results}


def main():
    spec_path, out_path = sys.argv[1], sys.argv[2]
    spec = json.load(open(spec_path, encoding="utf-8"))
    report = {}
    for name in spec["order"]:
        report[name] = run_program(spec, spec["programs"][name])
        if name == "gold" and (report[name]["declares"] or not all(s["ok"] for s in report[name]["scenarios"])):
            break  # the oracle does not hold for the gold: the candidate is not judged
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(report, f)


main()
