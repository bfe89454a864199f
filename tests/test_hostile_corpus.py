"""Adversarial corpus: hostile programs for every DSL whose toolchain can execute something.

Each program (tests/fixtures/hostile_corpus/<dsl>/) is written in its language and shaped to reach
the dangerous part of its toolchain: it matches the interface of the task it is judged against, so
that the syntax level passes wherever the danger lies in the semantic level. Per program the test
asserts:

  - no marker file appeared on the host (/tmp, /var/tmp, the repository, the user's home);
  - no planted secret (a file in the home, one in /var/tmp, an environment variable) is in the verdict;
  - neither listener (TCP on 127.0.0.1, a Unix socket under /var/tmp) accepted a connection;
  - no process the program started is still alive on the host;
  - the host side of the evaluation (validators, in a forked child) stayed within memory and time;
  - the verdict is `fail` at the expected level with one of the expected reasons;
  - the wall time is under the DSL's timeout times its toolchain runs, plus a margin;
  - every log and diagnostics stays capped.

Programs are templates: @NAME@ tokens (see Traps.tokens) are filled in with the paths, port and id
of this run, so a program knows where the markers would go and where the secrets are.

Timeouts are lowered per DSL (a copy of the card's limits, monkeypatched) to keep the run short, and
the disk quota is lowered so that disk fillers hit it within a second or two. Each evaluation runs in
a forked child (it inherits the patched cards) watched for memory and time, because some programs
attack the host side of the validators rather than the sandbox.

Cases listed in FINDINGS are known escapes or misclassified verdicts: they are strict xfails, so a
fix turns them into XPASS failures and the entry must then be removed.

Not in the corpus: SMILES (RDKit only parses a line notation), SysML v2 (an ANTLR parser and our
checks; imports are names, not files) and Lean 4 (unavailable here). IEC ST and OpenQASM have no
I/O as judged here, so only their CPU, memory and recursion cases are listed.

DSLBENCH_HOSTILE_REPORT=<file> writes the table of verdicts (status, reason, wall time) as JSON.
"""
from __future__ import annotations

import functools
import json
import os
import socket
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import evaluate_in_fork
from dslbench import pipeline, sandbox, toolchains
from dslbench.paths import repo_root
from dslbench.tasks import load_tasks

CORPUS = Path(__file__).parent / "fixtures" / "hostile_corpus"
DISK_MB = 64                 # disk quota of the work dir (and size of the private /tmp) in this test
HOST_RSS_MB = 1536           # the host side of one evaluation (validator + runner glue) must stay below this
MARGIN_S = 20.0              # wall-time slack on top of timeout x toolchain runs (start-up, gold runs, load)
LOG_LIMIT = 3 * sandbox.LOG_CAP   # a level's log: command line, status line and two capped streams


@dataclass(frozen=True)
class Setup:
    task: str                 # the task whose interface the programs match
    timeout_s: float          # the DSL's timeout in this test (the card's is longer)
    runs: tuple[int, int]     # sandboxed toolchain runs of the syntax and of the semantic level


SETUP = {
    "ufl": Setup("ufl-001", 4, (1, 2)),
    "gdscript": Setup("gdscript-001", 4, (1, 2)),
    "nextflow": Setup("nextflow-001", 8, (1, 1)),
    "terraform": Setup("terraform-001", 20, (1, 1)),
    "latex": Setup("latex-001", 5, (1, 1)),
    "verilog": Setup("verilog-001", 3, (1, 4)),
    "veriloga": Setup("veriloga-001", 5, (1, 2)),
    "solidity": Setup("solidity-001", 15, (1, 2)),
    "cypher": Setup("cypher-001", 6, (1, 1)),
    "jq": Setup("jq-001", 4, (1, 1)),
    "dafny": Setup("dafny-001", 8, (2, 1)),
    "iecst": Setup("iecst-001", 6, (1, 2)),
    "openqasm": Setup("openqasm-001", 8, (1, 1)),
    "vegalite": Setup("vegalite-001", 5, (1, 1)),
    "behaviortree": Setup("behaviortree-001", 5, (1, 1)),
}

# DSL -> [(name, program file, level it fails at, reasons it may fail with, why it is hostile)]
TABLE = {
    # UFL: the program is a Python module executed by the runner (runpy) at the syntax level.
    "ufl": [
        ("infinite_loop", "infinite_loop.py", "syntax", {"timeout"}, "while True at import time"),
        ("fork_bomb", "fork_bomb.py", "syntax", {"timeout", "resource_limit"}, "os.fork() forever, EAGAIN ignored"),
        ("memory_hog", "memory_hog.py", "syntax", {"resource_limit"}, "64 MB blocks until the address space is gone"),
        ("huge_output", "huge_output.py", "syntax", {"resource_limit"}, "400 MB on stderr: the capture's file-size cap"),
        ("disk_filler", "disk_filler.py", "syntax", {"resource_limit"}, "4 MB files until the disk quota"),
        ("write_outside", "write_outside.py", "syntax", {"compile_error"}, "markers in /tmp, /var/tmp, repo, home, ../"),
        ("read_secret", "read_secret.py", "syntax", {"compile_error"}, "secret files and env var into its error"),
        ("tcp_connect", "tcp_connect.py", "syntax", {"compile_error"}, "connects to the host's 127.0.0.1 listener"),
        ("unix_connect", "unix_connect.py", "syntax", {"compile_error"}, "connects to the Unix socket in /var/tmp"),
        ("shell_out", "shell_out.py", "syntax", {"compile_error"}, "bash: markers, cat secrets, /dev/tcp"),
        ("orphan_daemon", "orphan_daemon.py", "syntax", {"compile_error"}, "setsid double fork that outlives the run"),
        ("symlink_host_write", "symlink_host_write.py", "semantic", {"wrong_output"},
         "symlinks the host writes through between the levels (spec.json, run_ufl.py)"),
        ("symlink_host_read", "symlink_host_read.py", "syntax", {"compile_error", "runtime_error"},
         "report.json -> /dev/zero, read by the host after the run"),
    ],
    # GDScript: --check-only at the syntax level runs nothing; the semantic harness instances the
    # script, so the hostile code sits in _init() (the task's methods are missing: the scenario fails).
    "gdscript": [
        ("infinite_loop", "infinite_loop.gd", "semantic", {"timeout"}, "while true in _init"),
        ("fork_bomb", "fork_bomb.gd", "semantic", {"timeout", "resource_limit"}, "OS.execute of a shell fork bomb"),
        ("memory_hog", "memory_hog.gd", "semantic", {"resource_limit", "runtime_error"}, "256 MB PoolByteArrays"),
        ("huge_output", "huge_output.gd", "semantic", {"resource_limit"}, "200 MB of print(): the capture's file-size cap"),
        ("disk_filler", "disk_filler.gd", "semantic", {"resource_limit"}, "4 MB files via File until the quota"),
        ("write_outside", "write_outside.gd", "semantic", {"wrong_output"}, "File.WRITE to host paths, Directory.copy"),
        ("read_secret", "read_secret.gd", "semantic", {"wrong_output"}, "File.READ of the secrets, OS.get_environment"),
        ("tcp_connect", "tcp_connect.gd", "semantic", {"wrong_output"}, "StreamPeerTCP + HTTPClient to 127.0.0.1"),
        ("unix_connect", "unix_connect.gd", "semantic", {"wrong_output"}, "OS.execute(python3) to the Unix socket"),
        ("shell_out", "shell_out.gd", "semantic", {"wrong_output"}, "OS.execute(bash): markers, secrets, /dev/tcp"),
        ("orphan_daemon", "orphan_daemon.gd", "semantic", {"wrong_output"}, "setsid shell left running"),
    ],
    # Nextflow: without a nextflow binary the judge parses with Groovy to the CONVERSION phase, so the
    # script's Groovy never runs (it would under `nextflow run -preview`); what runs at parse time is
    # the global @Grab transformation (Ivy: network and file system) and the parsers' recursion.
    "nextflow": [
        ("infinite_loop", "infinite_loop.nf", "semantic", {"oracle_mismatch"}, "while (true) at top level"),
        ("fork_bomb", "fork_bomb.nf", "semantic", {"oracle_mismatch"}, "List.execute() forever"),
        ("write_outside", "write_outside.nf", "semantic", {"oracle_mismatch"}, "File.text = on host paths"),
        ("read_secret", "read_secret.nf", "semantic", {"oracle_mismatch"}, "File.text of the secrets into params"),
        ("tcp_connect", "tcp_connect.nf", "semantic", {"oracle_mismatch"}, "new Socket(127.0.0.1, port)"),
        ("unix_connect", "unix_connect.nf", "semantic", {"oracle_mismatch"}, "UnixDomainSocketAddress to /var/tmp"),
        ("shell_out", "shell_out.nf", "semantic", {"oracle_mismatch"}, "[bash, -c, ...].execute()"),
        ("grab_resolver", "grab_resolver.nf", "syntax", {"parse_error"}, "@Grab from a repository on 127.0.0.1"),
        ("grab_file_repo", "grab_file_repo.nf", "syntax", {"parse_error"}, "@Grab from file: repos in home, /var/tmp"),
        ("deep_nesting", "deep_nesting.nf", "syntax", {"parse_error", "resource_limit"}, "20000 nested parentheses"),
    ],
    # Terraform: one sandboxed run plans offline (aws provider only, from a local mirror) and
    # evaluates the policy. HCL has no loops, files or processes of its own at plan time; the reach
    # is file(), provisioners (apply only), other providers (not in the mirror) and module sources.
    # No fork bomb or disk filler can be written in it.
    "terraform": [
        ("cpu_hog", "cpu_hog.tf", "syntax", {"timeout"}, "1024^3 nested for-expression steps"),
        ("memory_hog", "memory_hog.tf", "syntax", {"resource_limit"}, "setproduct of a billion tuples"),
        ("huge_output", "huge_output.tf", "syntax", {"parse_error"}, "1 MB string quoted in an error"),
        ("read_secret", "read_secret.tf", "syntax", {"parse_error"}, "tonumber(file(secret)) quotes the content"),
        ("write_outside", "write_outside.tf", "semantic", {"oracle_mismatch"}, "local-exec markers (apply only)"),
        ("shell_out", "shell_out.tf", "syntax", {"parse_error"}, "data external runs a shell at plan time"),
        ("module_fetch_tcp", "module_fetch_tcp.tf", "syntax", {"parse_error"}, "module over HTTP from 127.0.0.1"),
        ("module_git_shell", "module_git_shell.tf", "syntax", {"parse_error"}, "git module sources: git clone"),
        ("unix_provider", "unix_provider.tf", "syntax", {"parse_error"}, "docker provider on unix://socket"),
    ],
    # LaTeX: pdflatex with -no-shell-escape and openin_any/openout_any = p (no absolute paths, no ..).
    # TeX has no sockets and cannot spawn without \write18; its memory is a fixed pool of its own.
    "latex": [
        ("infinite_loop", "infinite_loop.tex", "syntax", {"timeout"}, "\\def\\x{\\x}\\x"),
        ("memory_hog", "memory_hog.tex", "syntax", {"compile_error"}, "doubling token list: TeX capacity exceeded"),
        ("huge_output", "huge_output.tex", "syntax", {"resource_limit"}, "endless \\typeout: the capture's file-size cap"),
        ("disk_filler", "disk_filler.tex", "syntax", {"resource_limit"}, "\\openout 4 MB files until the quota"),
        ("write_outside", "write_outside.tex", "syntax", {"compile_error"}, "\\openout to ../, /tmp, the repository"),
        ("read_secret", "read_secret.tex", "syntax", {"compile_error"}, "\\openin/\\read/\\input of the secrets"),
        ("unix_socket_input", "unix_socket_input.tex", "syntax", {"compile_error"}, "\\openin/\\input of the socket"),
        ("shell_out", "shell_out.tex", "semantic", {"oracle_mismatch"}, "\\write18 and |pipe input (disabled)"),
    ],
    # Verilog: iverilog compiles (syntax), then the gold and the candidate are each compiled and run
    # with vvp against a generated testbench (semantic). Icarus has file I/O ($fopen, $readmemh,
    # $dumpfile, `include) but no sockets, no $system and no way to spawn processes.
    "verilog": [
        ("infinite_loop", "infinite_loop.sv", "semantic", {"timeout"}, "zero-delay while (1)"),
        ("memory_hog", "memory_hog.sv", "semantic", {"resource_limit", "runtime_error"}, "2^28 x 64-bit memory"),
        ("huge_output", "huge_output.sv", "semantic", {"resource_limit", "timeout"}, "forever $display of 1 KB lines"),
        ("disk_filler", "disk_filler.sv", "semantic", {"resource_limit", "timeout"}, "$fopen a new 4 MB file forever"),
        ("write_outside", "write_outside.sv", "semantic", {"wrong_output"}, "$fopen/$dumpfile on host paths"),
        ("read_secret", "read_secret.sv", "semantic", {"wrong_output"}, "$fgets/$readmemh of the secrets"),
        ("include_secret", "include_secret.sv", "syntax", {"compile_error"}, "`include of the secrets"),
        ("unix_socket_fopen", "unix_socket_fopen.sv", "semantic", {"wrong_output"}, "$fopen of the Unix socket"),
        ("shell_out", "shell_out.sv", "syntax", {"compile_error"}, "$system (not in Icarus 11)"),
    ],
    # Verilog-A: openvaf-r compiles the module to an OSDI library (syntax); VACASK loads and simulates
    # it (semantic). OpenVAF has no file I/O ($fopen, $table_model), no $system, no dynamic memory.
    "veriloga": [
        ("infinite_loop", "infinite_loop.va", "semantic", {"timeout"}, "while loop in the analog block"),
        ("huge_output", "huge_output.va", "semantic", {"timeout", "resource_limit"}, "$display 1e8 times per evaluation"),
        ("nan_bomb", "nan_bomb.va", "semantic", {"wrong_output"}, "exp(1e6 V): no convergence"),
        ("deep_expression", "deep_expression.va", "semantic", {"wrong_output"},
         "3000 nested parentheses (the current is off by 3000 V/r)"),
        ("include_secret", "include_secret.va", "syntax", {"compile_error"}, "`include of the secrets"),
        ("write_outside", "write_outside.va", "syntax", {"compile_error"}, "$fopen/$fwrite on host paths"),
        ("read_secret", "read_secret.va", "syntax", {"compile_error"}, "$table_model of the secret file"),
        ("shell_out", "shell_out.va", "syntax", {"compile_error"}, "$system"),
    ],
    # Solidity: solc-js compiles (imports are compile errors for authored tasks: no import callback);
    # the scenarios run on py-evm, an interpreter with no host I/O: contract code reaches only gas,
    # EVM memory, contract creation and the precompiles. No file, socket or process is reachable.
    "solidity": [
        ("infinite_loop", "infinite_loop.sol", "semantic", {"wrong_output", "timeout"}, "while (true) until out of gas"),
        ("memory_hog", "memory_hog.sol", "semantic", {"wrong_output"}, "2^60-byte memory, doubling buffers"),
        ("create_bomb", "create_bomb.sol", "semantic", {"wrong_output", "timeout"}, "contracts deploying 2^30 contracts"),
        ("precompile_abuse", "precompile_abuse.sol", "semantic", {"wrong_output"}, "modexp 1 KB exponent, 1 MB identity"),
        ("huge_output", "huge_output.sol", "syntax", {"compile_error"}, "5000 type errors (0.6 MB source)"),
        ("deep_nesting", "deep_nesting.sol", "syntax", {"compile_error"}, "20000 nested parentheses"),
        ("import_secret", "import_secret.sol", "syntax", {"compile_error"}, "import of the secrets"),
        ("import_socket", "import_socket.sol", "syntax", {"compile_error"}, "import of the socket and of a URL"),
    ],
    # Cypher: FalkorDB (redis-server + module) inside the sandbox, on a Unix socket in the work dir;
    # EXPLAIN at the syntax level, the query itself at the semantic level. Its reach: LOAD CSV
    # (file:// under an import folder in the work dir, http(s)://), memory and CPU. It cannot write
    # files or start processes.
    "cypher": [
        ("cpu_hog", "cpu_hog.cypher", "semantic", {"timeout"}, "cartesian product of 7 node scans"),
        ("memory_hog", "memory_hog.cypher", "syntax", {"resource_limit"},
         "collect() of range(1, 3e7): over the 512 MB query memory (at EXPLAIN)"),
        ("range_oom", "range_oom.cypher", "syntax", {"resource_limit"}, "range(1, 2e9) folded at plan time: 32 GB"),
        ("huge_output", "huge_output.cypher", "semantic", {"wrong_output"}, "3000 rows of 1 KB strings"),
        ("deep_nesting", "deep_nesting.cypher", "syntax", {"parse_error", "timeout"}, "5000 nested parentheses"),
        ("load_csv_secret", "load_csv_secret.cypher", "semantic", {"runtime_error"}, "LOAD CSV of the secrets (../, absolute)"),
        ("load_csv_traversal", "load_csv_traversal.cypher", "semantic", {"runtime_error"},
         "LOAD CSV file://../ out of the import folder"),
        ("load_csv_tcp", "load_csv_tcp.cypher", "semantic", {"runtime_error"}, "LOAD CSV from http://127.0.0.1"),
        ("load_csv_unix", "load_csv_unix.cypher", "semantic", {"runtime_error"}, "LOAD CSV of the Unix socket"),
    ],
    # jq: libjq (PyPI jq) in a sandboxed Python runner; compile at the syntax level, run at the
    # semantic level. jq has no sockets, no processes and no file writes; it reads files only through
    # module/data imports, and sees the environment ($ENV, env) and its inputs.
    "jq": [
        ("infinite_loop", "infinite_loop.jq", "semantic", {"timeout"}, "first(range(1; infinite) | select(. < 0))"),
        ("memory_hog", "memory_hog.jq", "semantic", {"resource_limit"}, "a string doubled 40 times"),
        ("deep_recursion", "deep_recursion.jq", "semantic", {"resource_limit", "timeout"}, "def f: [f]; f"),
        ("huge_output", "huge_output.jq", "semantic", {"wrong_output", "resource_limit"}, "400 MB through stderr"),
        ("read_env", "read_env.jq", "semantic", {"wrong_output"}, "$ENV, env, input_filename, $__loc__"),
        ("import_secret", "import_secret.jq", "syntax", {"parse_error"}, "import of the secrets as data"),
        ("include_secret", "include_secret.jq", "syntax", {"parse_error"}, "include of the home secret"),
        ("read_inputs", "read_inputs.jq", "semantic", {"wrong_output"}, "input/inputs past the given input"),
        ("regex_backtracking", "regex_backtracking.jq", "semantic", {"wrong_output", "timeout"}, "^(a|aa)+$ backtracking"),
    ],
    # Dafny 2.3 (mono): resolve and verify only (/compile:0); no compiled code or test ever runs, so
    # the reach is the parser's includes, the resolver and the verifier (z3).
    "dafny": [
        ("verifier_hang", "verifier_hang.dfy", "semantic", {"timeout"}, "Fermat for cubes: z3 nonlinear search"),
        ("include_dev_zero", "include_dev_zero.dfy", "syntax", {"compile_error", "resource_limit", "timeout"},
         "include \"/dev/zero\""),
        ("deep_nesting", "deep_nesting.dfy", "semantic", {"verification_failed"},
         "20000 nested parentheses"),
        ("huge_output", "huge_output.dfy", "syntax", {"compile_error"}, "20000 resolution errors"),
        ("include_secret", "include_secret.dfy", "syntax", {"compile_error"}, "include of the secrets"),
        ("include_socket", "include_socket.dfy", "syntax", {"compile_error"}, "include of the socket, /dev/stdin"),
        ("extern_io", "extern_io.dfy", "semantic", {"verification_failed"}, "{:extern} File.WriteAllText, Process.Start"),
    ],
    # IEC 61131-3 ST: parsed by blark and run by our own evaluator (st_eval.py): the language as
    # judged here has no file, socket or process functions, so only CPU, memory and recursion remain.
    "iecst": [
        ("infinite_loop", "infinite_loop.st", "semantic", {"timeout", "resource_limit"},
         "WHILE TRUE in the scan cycle (the evaluator's step budget stops it)"),
        ("memory_hog", "memory_hog.st", "semantic", {"resource_limit", "timeout"}, "ARRAY[0..200000000] OF LREAL"),
        ("deep_recursion", "deep_recursion.st", "semantic", {"runtime_error", "resource_limit"},
         "a function calling itself"),
        ("deep_nesting", "deep_nesting.st", "syntax", {"parse_error", "timeout"}, "5000 nested parentheses"),
    ],
    # OpenQASM 3: parsed (openqasm3, Qiskit's importer) and simulated by Qiskit/Aer; includes are
    # limited to the task's files. No I/O exists in the language, so only CPU and memory remain.
    "openqasm": [
        ("infinite_loop", "infinite_loop.qasm", "syntax", {"parse_error", "timeout"}, "while (c == 0) never changes"),
        ("huge_circuit", "huge_circuit.qasm", "semantic", {"timeout", "resource_limit"}, "for loop of 2e7 gates"),
        ("memory_hog", "memory_hog.qasm", "semantic", {"wrong_output", "resource_limit"}, "42-qubit statevector"),
        ("include_secret", "include_secret.qasm", "syntax", {"parse_error"}, "include of the secrets, the socket"),
    ],
    # Vega-Lite: schema + compile at the syntax level; the semantic level runs the chart's dataflow
    # with vega on node, whose loader reads files (mode 'file') and fetches URLs: data urls are the
    # reach, and Vega expressions (a sandboxed JavaScript subset). The charts match the task's
    # intent so the dataflow does run.
    "vegalite": [
        ("memory_hog", "memory_hog.vl.json", "semantic", {"resource_limit", "timeout"}, "a sequence of 1e9 tuples"),
        ("cpu_hog", "cpu_hog.vl.json", "semantic", {"timeout"}, "3e6 regex replaces on 2 KB strings"),
        ("read_secret", "read_secret.vl.json", "semantic", {"oracle_mismatch"}, "data url ../../var/tmp/<secret>"),
        ("read_secret_abs", "read_secret_abs.vl.json", "semantic", {"oracle_mismatch"}, "data url file://<home secret>"),
        ("data_tcp", "data_tcp.vl.json", "semantic", {"oracle_mismatch"}, "data url http://127.0.0.1:<port>"),
        ("data_unix", "data_unix.vl.json", "semantic", {"oracle_mismatch"}, "data url of the Unix socket"),
        ("expression_escape", "expression_escape.vl.json", "semantic", {"oracle_mismatch"},
         "constructor.constructor -> process -> child_process"),
        ("proto_escape", "proto_escape.vl.json", "semantic", {"oracle_mismatch"}, "datum.__proto__.constructor"),
    ],
    # Behavior Tree XML: lxml (no entities, no network, no DTD) and BehaviorTree.CPP 4 load the tree,
    # which is ticked against scripted palette nodes. The reach is <include path=...>, XML entities
    # and the tick loop; BT.CPP's built-in nodes do no I/O.
    "behaviortree": [
        ("infinite_loop", "infinite_loop.xml", "semantic", {"oracle_mismatch", "timeout"},
         "Repeat num_cycles=-1 (BT.CPP 4 returns RUNNING between cycles: the tick limit ends it)"),
        ("subtree_recursion", "subtree_recursion.xml", "syntax", {"resource_limit"},
         "MainTree includes itself as a SubTree (std::bad_alloc)"),
        ("deep_nesting", "deep_nesting.xml", "syntax", {"parse_error", "resource_limit", "runtime_error"},
         "20000 nested Sequence nodes"),
        ("include_secret", "include_secret.xml", "syntax", {"parse_error"}, "<include path=...> of the secrets"),
        ("xxe_secret", "xxe_secret.xml", "syntax", {"parse_error"}, "external entities naming the secrets"),
        ("billion_laughs", "billion_laughs.xml", "syntax", {"parse_error"}, "nested entity expansion"),
    ],
}

# (DSL, program) -> what is wrong today; those cases are expected to fail (strict xfail) until fixed.
FINDINGS = {
    ("verilog", "shell_out"): "iverilog -t null accepts an undefined $system; the semantic level fails it instead",
}


# --- traps: secrets, listeners, markers --------------------------------------------------------

class Listener:
    """A listening socket that records every connection it accepts (accept timeout 0.2 s)."""

    def __init__(self, family: int, address):
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.bind(address)
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.address = self.sock.getsockname()
        self.accepted: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self):
        while not self._stop.is_set():
            try:
                conn, peer = self.sock.accept()
            except (socket.timeout, OSError):
                continue
            self.accepted.append(str(peer or "unix peer"))
            conn.close()

    def close(self):
        self._stop.set()
        self._thread.join()
        self.sock.close()


class Traps:
    """Everything a hostile program could reach if the sandbox leaked, and the checks that it did not."""

    def __init__(self):
        self.id = uuid.uuid4().hex[:12]
        self.secret = f"SECRET-{uuid.uuid4().hex}"          # never appears in any program or path
        self.token = f"dslbench-hostile-{self.id}"          # marker names and process names carry it
        home, repo = Path.home(), repo_root()
        self.markers = [Path(f"/tmp/{self.token}.marker"), Path(f"/var/tmp/{self.token}.marker"),
                        repo / f"{self.token}.marker", home / f"{self.token}.marker"]
        self.secret_files = [home / f".dslbench-test-secret-{self.id}", Path(f"/var/tmp/dslbench-test-secret-{self.id}")]
        for path in self.secret_files:
            path.write_text(self.secret + "\n", encoding="utf-8")
            path.chmod(0o644)
        self.unix_path = Path(f"/var/tmp/{self.token}.sock")
        self.tcp = Listener(socket.AF_INET, ("127.0.0.1", 0))
        self.unix = Listener(socket.AF_UNIX, str(self.unix_path))
        self.unix_path.chmod(0o777)
        self.watched = [Path("/tmp"), Path("/var/tmp"), repo, home]

    @property
    def tokens(self) -> dict[str, str]:
        return {"@ID@": self.id, "@TOKEN@": self.token, "@PORT@": str(self.tcp.address[1]),
                "@UNIX@": str(self.unix_path), "@MARK_TMP@": str(self.markers[0]),
                "@MARK_VARTMP@": str(self.markers[1]), "@MARK_REPO@": str(self.markers[2]),
                "@MARK_HOME@": str(self.markers[3]), "@SECRET_HOME@": str(self.secret_files[0]),
                "@SECRET_VARTMP@": str(self.secret_files[1])}

    def fill(self, template: str) -> str:
        for token, value in self.tokens.items():
            template = template.replace(token, value)
        return template

    def escapes(self) -> list[str]:
        """What got out since the last call (and clean it up, so the next program starts clean)."""
        found = []
        for folder in self.watched:
            for path in folder.glob(f"*{self.token}*"):
                if path != self.unix_path:
                    found.append(f"file on the host: {path}")
                    path.unlink(missing_ok=True)
        for listener, what in ((self.tcp, "TCP 127.0.0.1"), (self.unix, f"unix {self.unix_path}")):
            if listener.accepted:
                found.append(f"{what} listener accepted {len(listener.accepted)} connection(s)")
                listener.accepted.clear()
        for pid, cmdline in host_processes(self.token):
            found.append(f"process {pid} still running on the host: {cmdline}")
            try:
                os.kill(pid, 9)
            except OSError:
                pass
        return found

    def close(self):
        self.tcp.close()
        self.unix.close()
        for path in [*self.secret_files, self.unix_path, *self.markers]:
            path.unlink(missing_ok=True)


def host_processes(token: str) -> list[tuple[int, str]]:
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if token in cmdline:
            found.append((int(proc.name), cmdline.strip()))
    return found


@pytest.fixture(scope="module")
def traps():
    t = Traps()
    yield t
    t.close()
    target = os.environ.get("DSLBENCH_HOSTILE_REPORT")   # the table of verdicts, for review
    if target and RESULTS:
        Path(target).write_text(json.dumps(RESULTS, indent=1), encoding="utf-8")


# --- the host side of one evaluation, guarded --------------------------------------------------

def evaluate_guarded(dsl: str, task, program: str, wall_s: float) -> tuple[dict | None, float, str]:
    """pipeline.evaluate in a forked child killed past HOST_RSS_MB or `wall_s` (conftest.evaluate_in_fork)."""
    return evaluate_in_fork(dsl, task, program, wall_s, rss_mb=HOST_RSS_MB)


def lowered_limits(monkeypatch, tc, timeout_s: float) -> None:
    limits = {**tc.card.get("limits", {}), "timeout_s": timeout_s, "disk_mb": DISK_MB}
    monkeypatch.setitem(tc.card, "limits", limits)


@functools.cache
def task_of(dsl: str, task_id: str):
    return next(t for t in load_tasks([dsl])[dsl] if t.id == task_id)


def budget_s(setup: Setup, level: str) -> float:
    syntax_runs, semantic_runs = setup.runs
    runs = syntax_runs + (semantic_runs if level == "semantic" else 0)
    return setup.timeout_s * runs + MARGIN_S


def available_or_skip(dsl: str):
    if not sandbox.sandbox_mode().startswith("bwrap"):
        pytest.skip(f"the corpus tests the bubblewrap sandbox; here: {sandbox.sandbox_mode()}")
    probe = toolchains.probe(dsl)
    if not probe.available:
        pytest.skip(f"{dsl}: {probe.reason}")
    return toolchains.get(dsl)


# --- the corpus --------------------------------------------------------------------------------

def _cases():
    for dsl, rows in TABLE.items():
        for name, file, level, reasons, why in rows:
            marks = [pytest.mark.xfail(reason=FINDINGS[(dsl, name)], strict=True)] if (dsl, name) in FINDINGS else []
            yield pytest.param(dsl, name, file, level, reasons, why, id=f"{dsl}-{name}", marks=marks)


RESULTS: list[dict] = []     # one row per judged program (written to $DSLBENCH_HOSTILE_REPORT when set)


@pytest.mark.parametrize("dsl, name, file, level, reasons, why", list(_cases()))
def test_hostile_program_is_contained(dsl, name, file, level, reasons, why, traps, monkeypatch):
    tc = available_or_skip(dsl)
    setup = SETUP[dsl]
    lowered_limits(monkeypatch, tc, setup.timeout_s)
    monkeypatch.setenv("DSLBENCH_TEST_SECRET", traps.secret)
    task = task_of(dsl, setup.task)
    program = traps.fill((CORPUS / dsl / file).read_text(encoding="utf-8"))
    budget = budget_s(setup, level)

    out, wall, host_problem = evaluate_guarded(dsl, task, program, wall_s=budget + 30)
    escapes = traps.escapes()
    record = {"dsl": dsl, "program": name, "wall_s": round(wall, 2), "escapes": escapes, "host": host_problem}
    if out:
        record.update({f"{lv}_{k}": out[lv][k] for lv in ("syntax", "semantic") for k in ("status", "reason")})
        record["diagnostics"] = (out["semantic"] if level == "semantic" else out["syntax"])["diagnostics"][:200]
    RESULTS.append(record)

    assert not escapes, f"{dsl}/{name} got out of the sandbox: {escapes}"
    assert not host_problem, f"{dsl}/{name}: {host_problem}"
    assert traps.secret not in json.dumps(out), f"{dsl}/{name}: the planted secret is in the verdict"
    for lv in ("syntax", "semantic"):
        assert len(out[lv]["log"]) < LOG_LIMIT, f"{lv} log not capped ({len(out[lv]['log'])} chars)"
        assert len(out[lv]["diagnostics"]) < LOG_LIMIT, f"{lv} diagnostics not capped"
    syn, sem = out["syntax"], out["semantic"]
    if level == "syntax":
        assert (syn["status"], sem["reason"]) == ("fail", "syntax_failed"), (syn, sem["reason"])
        assert syn["reason"] in reasons, (syn["reason"], syn["diagnostics"])
    else:
        assert syn["status"] == "pass", (syn["reason"], syn["diagnostics"])
        assert sem["status"] == "fail" and sem["reason"] in reasons, (sem["status"], sem["reason"], sem["diagnostics"])
    assert wall < budget, f"{wall:.1f} s, budget {budget:.0f} s"


def test_golds_pass_beside_a_fork_bomb(traps, monkeypatch):
    """While a UFL fork bomb runs (a thread), UFL golds judged concurrently (2 threads) pass both levels.

    Each sandboxed run has a uid of its own, so the bomb's process limit is not the golds'.
    """
    tc = available_or_skip("ufl")
    lowered_limits(monkeypatch, tc, 20)
    golds = load_tasks(["ufl"])["ufl"][:4]
    bomb = traps.fill((CORPUS / "ufl" / "fork_bomb.py").read_text(encoding="utf-8"))
    bomb_out = {}
    bomb_thread = threading.Thread(target=lambda: bomb_out.update(pipeline.evaluate("ufl", golds[0], bomb)))
    bomb_thread.start()
    time.sleep(2.0)                     # the bomb is at its process limit before the golds start
    with ThreadPoolExecutor(max_workers=2) as pool:
        outs = list(pool.map(lambda t: pipeline.evaluate("ufl", t, t.gold), golds))
    bomb_was_running = bomb_thread.is_alive()
    bomb_thread.join()

    assert bomb_was_running, "the fork bomb ended before the golds did: the check proves nothing"
    assert bomb_out["syntax"]["status"] == "fail" and bomb_out["syntax"]["reason"] in {"timeout", "resource_limit"}
    for task, out in zip(golds, outs):
        assert (out["syntax"]["status"], out["semantic"]["status"]) == ("pass", "pass"), \
            (task.id, out["syntax"]["diagnostics"], out["semantic"]["diagnostics"])
    assert not traps.escapes()
