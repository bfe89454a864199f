// A native-solc command line over solc-js, for forge: forge runs a `solc` executable and cannot
// download one offline, and no registry we install from ships a native solc. forge only calls
//   solc --version            (it reads "Version: X.Y.Z+commit.H...")
//   solc --standard-json ...  (input on stdin, output on stdout; --base-path, --include-path and
//                              --allow-paths name the folders imports may be read from)
// forge passes every source it resolved in the input itself; the import callback is the fallback
// solc has, and like solc it never reads outside the folders it was given.
//
// usage (from a wrapper script): node solc_cli.js --standard-json [--base-path P] ... < input.json
'use strict';
const fs = require('fs');
const path = require('path');
const solc = require('solc');

function main(args) {
  if (args.includes('--version')) {
    process.stdout.write(`solc, the solidity compiler commandline interface\nVersion: ${solc.version()}\n`);
    return 0;
  }
  if (!args.includes('--standard-json')) {
    process.stderr.write('solc_cli.js (solc-js for forge): only --version and --standard-json are supported\n');
    return 2;
  }
  const roots = [process.cwd()];
  for (let i = 0; i < args.length - 1; i++) {
    if (args[i] === '--base-path' || args[i] === '--include-path') roots.push(path.resolve(args[i + 1]));
    if (args[i] === '--allow-paths') roots.push(...args[i + 1].split(',').filter(Boolean).map(p => path.resolve(p)));
  }
  const read = (wanted) => {
    for (const root of roots) {
      const full = path.resolve(root, wanted);
      if (full !== root && !full.startsWith(root + path.sep)) continue;
      try {
        return {contents: fs.readFileSync(full, 'utf8')};
      } catch (e) { /* try the next folder */ }
    }
    return {error: `File not found: ${wanted}`};
  };
  process.stdout.write(solc.compile(fs.readFileSync(0, 'utf8'), {import: read}));
  return 0;
}

process.exitCode = main(process.argv.slice(2));
