// Runs inside the sandbox: compile Vega-Lite specs with vega-lite 5, run the compiled Vega specs
// headless with vega 5 (no renderer) and write what each chart draws as JSON.
//
// usage: node run_vegalite.js OUT.json SPEC.json ...
// The report is rewritten after every spec, so a spec that kills the process (memory, time)
// leaves the results of the specs before it.
//
// For every spec: {ok, stage, error, warnings, marks: [{name, marktype, props, rows, truncated}],
// scales: {name: {type, domain}}}. A mark is a Vega mark with role "mark" (what Vega-Lite draws
// for a view, not axes, legends or headers); its rows are the data tuples of its items projected
// onto the Vega encoding properties that read data (field references or datum[...] in signals),
// plus the keys of the facet groups it is drawn in.
'use strict';
const fs = require('fs');

// NODE_PATH points at toolchains/vegalite/node_modules (vega, vega-lite).
const vega = require('vega');
const vl = require('vega-lite');

const MAX_ROWS = 5000;
// not data a chart shows: tooltips, accessibility text, links, and `defined` (a line's gaps, a
// function of the x/y values that are compared anyway)
const SKIP_PROP = /^(tooltip|description|href|cursor|defined|aria.*)$/;
const AUX_MARK = /(_brush|_brush_bg|_voronoi)$/;

const CWD = process.cwd() + '/';

function collector(warnings) {
  let level = 0;
  const push = (kind) => (...args) => {
    // file paths relative to the work directory, so that logs do not depend on where it is
    const text = args.map(String).join(' ').split(CWD).join('./').slice(0, 300);
    if (warnings.length < 50) warnings.push(kind + ': ' + text);
  };
  const logger = {
    level(l) { if (l === undefined) return level; level = l; return logger; },
    error: push('error'), warn: push('warn'), info() { return logger; }, debug() { return logger; },
  };
  return logger;
}

function datumRefs(expr) {
  const refs = [];
  const re = /datum(?:\[\s*("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')\s*\]|\.([A-Za-z_$][\w$]*))/g;
  let m;
  while ((m = re.exec(expr)) !== null) {
    let name = m[2];
    if (m[1] !== undefined) {
      name = m[1][0] === '"' ? JSON.parse(m[1]) : m[1].slice(1, -1).replace(/\\(.)/g, '$1');
    }
    if (!refs.includes(name)) refs.push(name);
  }
  return refs;
}

function valueRefs(v) {
  if (Array.isArray(v)) return [].concat(...v.map(valueRefs)).filter((x, i, a) => a.indexOf(x) === i);
  if (!v || typeof v !== 'object') return [];
  let refs = [];
  if (typeof v.field === 'string') refs = [v.field];
  else if (typeof v.signal === 'string') refs = datumRefs(v.signal);
  for (const k of ['offset', 'mult']) {  // e.g. xOffset of grouped bars: {field, offset: {field}}
    for (const r of valueRefs(v[k])) if (!refs.includes(r)) refs.push(r);
  }
  return refs;
}

// name -> compiled mark definition (group marks hold nested marks)
function markDefs(spec, out = {}) {
  for (const m of spec.marks || []) {
    if (m.name && !(m.name in out)) out[m.name] = m;
    if (m.type === 'group') markDefs(m, out);
  }
  return out;
}

function plain(v) {
  if (v instanceof Date) return {$date: v.getTime()};
  if (typeof v === 'number' && !Number.isFinite(v)) return {$number: String(v)};
  if (v === undefined) return null;
  if (Array.isArray(v)) return v.map(plain);
  return v;
}

// prop -> data fields it reads; constants: prop -> value in data space ({scale, value}, e.g. the
// zero baseline of an unstacked bar, so that it equals the y2 field of a stacked one)
function propMap(def) {
  const enc = (def && def.encode) || {};
  const props = {};
  const constants = {};
  for (const set of ['enter', 'update']) {
    for (const [prop, v] of Object.entries(enc[set] || {})) {
      if (SKIP_PROP.test(prop)) continue;
      const refs = valueRefs(v);
      if (refs.length) { props[prop] = refs; delete constants[prop]; }
      else if (v && !Array.isArray(v) && typeof v === 'object' && v.scale && 'value' in v) constants[prop] = v.value;
    }
  }
  return {props, constants};
}

function extractMarks(view, vgSpec) {
  const defs = markDefs(vgSpec);
  const marks = [];
  const byName = {};
  function walk(node, groupKeys, depth) {
    if (!node || !node.marktype) return;
    const def = node.name ? defs[node.name] : undefined;
    if (node.marktype === 'group') {
      const facet = def && def.from && def.from.facet;
      for (const item of node.items || []) {
        let keys = groupKeys;
        if (facet && Array.isArray(facet.groupby) && item.datum) {
          keys = groupKeys.concat(facet.groupby.map((f) => plain(item.datum[f])));
        }
        for (const child of item.items || []) walk(child, keys, depth + 1);
      }
      return;
    }
    if (node.role !== 'mark' || (node.name && AUX_MARK.test(node.name))) return;
    const key = node.name || `${node.marktype}@${depth}`;
    let entry = byName[key];
    if (!entry) {
      const {props, constants} = propMap(def);
      entry = byName[key] = {name: key, marktype: node.marktype, props, constants, rows: [], truncated: false};
      marks.push(entry);
    }
    for (const item of node.items || []) {
      if (entry.rows.length >= MAX_ROWS) { entry.truncated = true; break; }
      const d = item.datum || {};
      const row = Object.assign({}, entry.constants);
      for (const [prop, refs] of Object.entries(entry.props)) {
        row[prop] = refs.length === 1 ? plain(d[refs[0]]) : refs.map((r) => plain(d[r]));
      }
      if (groupKeys.length) row['$groups'] = groupKeys;
      entry.rows.push(row);
    }
  }
  walk(view.scenegraph().root, [], 0);
  return marks;
}

function extractScales(view, vgSpec) {
  const scales = {};
  for (const s of vgSpec.scales || []) {
    try {
      const sc = view.scale(s.name);
      if (sc) scales[s.name] = {type: sc.type, domain: plain(sc.domain())};
    } catch (e) { /* a scale that cannot be read is simply absent */ }
  }
  return scales;
}

function clean(e) {
  return String((e && e.message) || e).split(CWD).join('./').slice(0, 1000);
}

async function judge(file) {
  const warnings = [];
  let spec;
  try {
    spec = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    return {ok: false, stage: 'json', error: clean(e), warnings};
  }
  let compiled;
  try {
    compiled = vl.compile(spec, {logger: collector(warnings)});
  } catch (e) {
    return {ok: false, stage: 'compile', error: clean(e), warnings};
  }
  let view;
  try {
    const loader = vega.loader({mode: 'file', baseURL: CWD});
    view = new vega.View(vega.parse(compiled.spec), {renderer: 'none', loader, logger: collector(warnings), logLevel: vega.Warn});
    await view.runAsync();
  } catch (e) {
    return {ok: false, stage: 'vega', error: clean(e), warnings};
  }
  try {
    return {ok: true, stage: 'done', error: '', warnings,
            marks: extractMarks(view, compiled.spec), scales: extractScales(view, compiled.spec)};
  } finally {
    view.finalize();
  }
}

async function main() {
  const [out, ...files] = process.argv.slice(2);
  const report = {};
  for (const f of files) {
    report[f] = await judge(f);
    fs.writeFileSync(out, JSON.stringify(report));
  }
  fs.writeFileSync(out, JSON.stringify(report));
}

main().catch((e) => { process.stderr.write(String((e && e.stack) || e) + '\n'); process.exit(2); });
