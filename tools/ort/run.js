#!/usr/bin/env node
// Runs an ONNX model with onnxruntime's CPU execution provider on .npy inputs:
// tailor's reference runtime (issue 5). Installed by scripts/install-ort.sh.
//
//   node tools/ort/run.js MODEL.onnx --input NAME=FILE.npy ... [--output DIR]
//                         [--threads N] [--time N]
//
//   --input NAME=FILE.npy  one per model input (f32, f16, i64, i32, u8, bool)
//   --input NAME=DIR       many runs in one process (the model loads once):
//                          each DIR/<stem>.npy, sorted by name, is one run;
//                          every directory input must hold the same stems;
//                          file inputs are shared by all runs; outputs go to
//                          DIR_OUT/<stem>/<name>.npy; not with --time
//   --output DIR           writes each output as DIR/<name>.npy (created if
//                          missing; characters other than [A-Za-z0-9._-] in a
//                          name become '_'); written atomically
//   --threads N            intra_op_num_threads (default 1); inter_op is 1,
//                          sequential execution, graph optimization level
//                          left at onnxruntime's default (not set here)
//   --time N               after one warm-up run, N timed runs; prints
//                          `median_ms=<float> runs=<N> threads=<T>` on stdout
//
// stdout: with --output, one line per output `output <name> <type> [d0,d1,...]`
// (for directory inputs each run's lines follow a line `run <stem>`); with
// --time, the median line. Errors: one line `ort-run: <problem>` on
// stderr, exit code 2 (bad arguments or inputs) or 1 (onnxruntime failed).
'use strict';

const fs = require('fs');
const path = require('path');
const { readNpy, writeNpy } = require('./npy.js');

const ORT_DIR = process.env.TAILOR_ORT_DIR || path.join(__dirname, '..', '..', '.ort', 'node_modules');

function die(msg, code = 2) {
  process.stderr.write(`ort-run: ${String(msg).split('\n')[0]}\n`);
  process.exit(code);
}

function parseArgs(argv) {
  const a = { model: null, inputs: [], output: null, threads: 1, time: 0 };
  const positiveInt = (flag, v) => {
    if (v === undefined || !/^\d+$/.test(v) || Number(v) < 1) die(`${flag} needs a positive integer, got '${v ?? ''}'`);
    return Number(v);
  };
  for (let i = 0; i < argv.length; i++) {
    const s = argv[i];
    if (s === '--input') {
      const v = argv[++i];
      const eq = v === undefined ? -1 : v.indexOf('=');
      if (eq <= 0 || eq === v.length - 1) die(`--input needs NAME=FILE.npy, got '${v ?? ''}'`);
      a.inputs.push({ name: v.slice(0, eq), file: v.slice(eq + 1) });
    } else if (s === '--output') {
      a.output = argv[++i];
      if (!a.output) die('--output needs a directory');
    } else if (s === '--threads') a.threads = positiveInt(s, argv[++i]);
    else if (s === '--time') a.time = positiveInt(s, argv[++i]);
    else if (s === '-h' || s === '--help') {
      process.stdout.write('usage: run.js MODEL.onnx --input NAME=FILE.npy ... [--output DIR] [--threads N] [--time N]\n');
      process.exit(0);
    } else if (s.startsWith('-')) die(`unknown option '${s}'`);
    else if (a.model === null) a.model = s;
    else die(`unexpected argument '${s}'`);
  }
  if (!a.model) die('no model given (usage: run.js MODEL.onnx --input NAME=FILE.npy ... [--output DIR] [--threads N] [--time N])');
  if (!a.output && !a.time) die('nothing to do: give --output DIR and/or --time N');
  return a;
}

function safeName(name) {
  return name.replace(/[^A-Za-z0-9._-]/g, '_');
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (!fs.existsSync(args.model)) die(`${args.model}: no such file`);

  const load = (file) => {
    try {
      return readNpy(file);
    } catch (e) {
      die(e.message);
    }
  };
  // Shared feeds (file inputs) and per-run feeds (directory inputs).
  const shared = {};
  const perRun = {};
  let stems = null;
  for (const { name, file } of args.inputs) {
    if (name in shared || name in perRun) die(`input '${name}' given twice`);
    if (!fs.existsSync(file)) die(`${file}: no such file`);
    if (fs.statSync(file).isDirectory()) {
      const list = fs.readdirSync(file).filter((f) => f.endsWith('.npy')).map((f) => f.slice(0, -4)).sort();
      if (list.length === 0) die(`${file}: no .npy files`);
      if (stems === null) stems = list;
      else if (list.join('\n') !== stems.join('\n')) die(`${file}: holds other file names than the other input directories`);
      perRun[name] = file;
    } else {
      shared[name] = load(file);
    }
  }
  if (stems !== null && args.time) die('--time takes file inputs, not directories');
  if (stems !== null && !args.output) die('directory inputs need --output DIR');
  const feedsOf = (stem) => {
    const feeds = { ...shared };
    for (const [name, dir] of Object.entries(perRun)) {
      feeds[name] = tensor(load(path.join(dir, `${stem}.npy`)));
    }
    return feeds;
  };
  const inputNames = [...Object.keys(shared), ...Object.keys(perRun)];
  if (stems !== null) for (const dir of Object.values(perRun)) for (const stem of stems) load(path.join(dir, `${stem}.npy`));

  // onnxruntime loads after the arguments and inputs are checked (it takes a while).
  let ort;
  try {
    ort = require(path.join(ORT_DIR, 'onnxruntime-node'));
  } catch (e) {
    die(`onnxruntime-node is not installed in ${ORT_DIR} (run scripts/install-ort.sh): ${e.message}`);
  }
  const tensor = (t) => new ort.Tensor(t.type, t.data, t.dims);
  for (const [name, t] of Object.entries(shared)) shared[name] = tensor(t);

  let session;
  try {
    session = await ort.InferenceSession.create(args.model, {
      executionProviders: ['cpu'],
      intraOpNumThreads: args.threads,
      interOpNumThreads: 1,
      executionMode: 'sequential',
    });
  } catch (e) {
    die(`${args.model}: onnxruntime cannot load the model: ${e.message}`, 1);
  }
  for (const n of session.inputNames) if (!inputNames.includes(n)) die(`${args.model}: model input '${n}' not given (--input ${n}=FILE.npy)`);
  for (const n of inputNames) {
    if (!session.inputNames.includes(n)) die(`${args.model}: model has no input '${n}' (inputs: ${session.inputNames.join(', ')})`);
  }

  const runOnce = async (feeds) => {
    try {
      return await session.run(feeds);
    } catch (e) {
      die(`${args.model}: onnxruntime run failed: ${e.message}`, 1);
    }
  };
  const files = session.outputNames.map(safeName);
  const clash = files.find((f, i) => files.indexOf(f) !== i);
  if (clash !== undefined && args.output) die(`${args.model}: two outputs would both be written as ${clash}.npy`);
  const writeOutputs = (results, dir) => {
    try {
      fs.mkdirSync(dir, { recursive: true });
    } catch (e) {
      die(`${dir}: cannot create the output folder: ${e.code || e.message}`);
    }
    // Every destination is checked before the first is written: a folder in
    // the way of the second output must not leave the first one written.
    for (const name of session.outputNames) {
      const dest = path.join(dir, `${safeName(name)}.npy`);
      let st = null;
      try {
        st = fs.statSync(dest);
      } catch (e) {}
      if (st && !st.isFile()) die(`${dest}: exists and is not a regular file; no output written`);
    }
    const lines = [];
    for (const name of session.outputNames) {
      const t = results[name];
      writeNpy(path.join(dir, `${safeName(name)}.npy`), t.type, t.dims.map(Number), t.data);
      lines.push(`output ${name} ${t.type} [${t.dims.join(',')}]`);
    }
    return lines;
  };

  if (stems !== null) {
    for (const stem of stems) {
      const lines = writeOutputs(await runOnce(feedsOf(stem)), path.join(args.output, stem));
      process.stdout.write(`run ${stem}\n` + lines.join('\n') + '\n');
    }
    await session.release?.();
    return;
  }

  const feeds = feedsOf(null);
  const results = await runOnce(feeds);  // also the warm-up run of --time
  if (args.output) process.stdout.write(writeOutputs(results, args.output).join('\n') + '\n');
  if (args.time) {
    const ms = [];
    for (let i = 0; i < args.time; i++) {
      const t0 = process.hrtime.bigint();
      await runOnce(feeds);
      ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    ms.sort((x, y) => x - y);
    const n = ms.length;
    const median = n % 2 ? ms[(n - 1) / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
    process.stdout.write(`median_ms=${median.toFixed(3)} runs=${n} threads=${args.threads}\n`);
  }
  await session.release?.();
}

main().catch((e) => die(e && e.message ? e.message : e, 1));
