// Runs inside the sandbox: compile Solidity files with solc-js, one file per compiler call, and
// write a JSON report (diagnostics, ABI + creation bytecode per contract, declared contracts).
//
// usage: node --liftoff-only --disable-wasm-trap-handler solc_compile.js JOB.json
//   JOB: {"output": "compiled.json", "evm_version": "prague",
//         "files": [{"path": "program.sol", "name": unit name (default: path),
//                    "import_root": dir or absent, "remappings": ["a/=lib/a/", ...]}]}
//   Each file is compiled alone. Without import_root an import is a compile error; with it, imports
//   are read from that directory only (and its node_modules/ and lib/). After the first file with an
//   error the remaining files are skipped (they only serve the semantic level).
//   `require('solc')` resolves through NODE_PATH (toolchains/solidity/node_modules).
'use strict';
const fs = require('fs');
const solc = require('solc');

const path = require('path');

function location(err) {
  const m = /-->\s*([^\s:]+):(\d+):(\d+):/.exec(err.formattedMessage || '');
  return m ? `${m[1]}:${m[2]}:${m[3]}` : '';
}

function declared(ast) {
  // Contract-level declarations from the AST: kind, abstract, ancestors (linearized, without itself).
  const names = {};
  const defs = (ast && ast.nodes || []).filter(n => n.nodeType === 'ContractDefinition');
  for (const d of defs) names[d.id] = d.name;
  return defs.map(d => ({
    name: d.name,
    kind: d.contractKind,
    abstract: Boolean(d.abstract),
    inherits: (d.linearizedBaseContracts || []).filter(id => id !== d.id).map(id => names[id] || `#${id}`),
  }));
}

function importer(root) {
  if (!root) return undefined;
  const base = path.resolve(root);
  return (wanted) => {
    for (const prefix of ['', 'node_modules', 'lib']) {
      const full = path.resolve(base, prefix, wanted);
      if (!full.startsWith(base + path.sep)) continue;  // never outside the repository
      try {
        return {contents: fs.readFileSync(full, 'utf8')};
      } catch (e) { /* try the next place */ }
    }
    return {error: `File not found in the repository: ${wanted}`};
  };
}

function compileOne(spec, evmVersion) {
  const file = spec.name || spec.path;
  const input = {
    language: 'Solidity',
    sources: {[file]: {content: fs.readFileSync(spec.path, 'utf8')}},
    settings: {
      evmVersion,
      remappings: spec.remappings || [],
      optimizer: {enabled: false},
      outputSelection: {'*': {'*': ['abi', 'evm.bytecode.object'], '': ['ast']}},
    },
  };
  const callback = importer(spec.import_root);
  const output = JSON.parse(callback ? solc.compile(JSON.stringify(input), {import: callback})
                                     : solc.compile(JSON.stringify(input)));
  const errors = (output.errors || []).map(e => ({
    severity: e.severity, type: e.type, message: e.message, location: location(e),
  }));
  const contracts = {};
  for (const [name, c] of Object.entries((output.contracts || {})[file] || {})) {
    contracts[name] = {abi: c.abi || [], bytecode: ((c.evm || {}).bytecode || {}).object || ''};
  }
  const source = (output.sources || {})[file] || {};
  return {errors, contracts, declared: declared(source.ast)};
}

function main() {
  const job = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  const report = {compiler: solc.version(), evm_version: job.evm_version, files: {}};
  for (const spec of job.files) {
    const result = compileOne(spec, job.evm_version);
    report.files[spec.name || spec.path] = result;
    if (result.errors.some(e => e.severity === 'error')) break;
  }
  fs.writeFileSync(job.output, JSON.stringify(report));
}

main();
