// symcomm's interactive page. A classic script (Chromium runs no ES module from file://).
// The arithmetic is not here: it is in formulas/*.js (loaded on demand), generated from the SymPy expressions.
// This file reads the inputs, calls those functions, and draws what they return.
(function () {
  "use strict";

  const CAT = globalThis.SYMCOMM_CATALOG;
  // the long texts many subjects share are written once (site.SHARED_TEXTS): each subject holds their index
  for (const sub of CAT.subjects) for (const key of CAT.shared_texts) sub[key] = CAT.texts[sub[key]];
  const BY_IDENT = new Map(CAT.subjects.map((s) => [s.ident, s]));
  const TIME_NAMES = ["alpha", "beta", "gamma", "alpha_inter", "beta_inter"];
  const GREEK = { Phi: "Φ", Phi_E: "Φ_E", alpha: "α", beta: "β", gamma: "γ", alpha_inter: "α_inter",
                  beta_inter: "β_inter", eta: "η", kappa: "κ" };
  const DEFAULT = { subject: "all_reduce__ring", dtype: "bf16", hardware: "a100", model: "", gated: "" };
  const $ = (id) => document.getElementById(id);

  // ---- state: what is chosen and what was typed; it lives in the URL's fragment

  let state = readHash();

  function readHash() {
    const query = new URLSearchParams(location.hash.replace(/^#/, ""));
    const out = { ...DEFAULT, values: {}, times: {} };
    for (const [key, value] of query) {
      if (key in DEFAULT) out[key] = value;
      else if (TIME_NAMES.includes(key)) out.times[key] = value;
      else if (key in CAT.symbols) out.values[key] = value;
    }
    if (!BY_IDENT.has(out.subject)) out.subject = DEFAULT.subject;
    if (!(out.dtype in CAT.dtypes)) out.dtype = DEFAULT.dtype;
    if (out.hardware !== "" && !(out.hardware in CAT.hardware)) out.hardware = DEFAULT.hardware;
    if (out.model !== "" && !(out.model in CAT.models)) out.model = "";
    if (!["", "0", "1"].includes(out.gated)) out.gated = "";
    return out;
  }

  function writeHash() {
    const query = new URLSearchParams();
    for (const key of Object.keys(DEFAULT)) query.set(key, state[key]);
    for (const [key, value] of Object.entries(state.values)) query.set(key, value);
    for (const [key, value] of Object.entries(state.times)) query.set(key, value);
    const hash = "#" + query.toString();
    if (location.hash !== hash) history.replaceState(null, "", hash);
  }

  // ---- the formulas: one script per primitive (all its algorithms: the chart draws them) or strategy variant,
  // inserted as a classic script when a view first needs it (a module, or a dynamic import, would not load from file://);
  // formulas/helpers.js, which they share, is loaded by index.html before this file

  const loading = new Map();
  function load(file) {
    if (!loading.has(file)) {
      $("loading").hidden = false;
      $("loading").textContent = `Loading ${file} …`;
      loading.set(file, new Promise((resolve, reject) => {
        const script = document.createElement("script");
        script.src = file;
        script.onload = resolve;
        script.onerror = () => {
          loading.delete(file);        // a later render tries again
          script.remove();
          reject(new Error(`could not load ${file}`));
        };
        document.head.appendChild(script);
      }));
    }
    return loading.get(file);
  }

  // ---- reading numbers: the command line's grammar and words (numbers.js, from symcomm/base/inputs.py)

  const NUMBERS = globalThis.SYMCOMM_NUMBERS;

  /** A symbol's value as the formulas take it, checked as the command line checks it: M may carry a
   *  size unit (M=64MiB: bytes of the chosen dtype), as in eval. */
  function symbolValue(sub, name, text) {
    const info = CAT.symbols[name];
    const typed = name === "M" ? NUMBERS.elementsText(String(text), state.dtype, CAT.dtypes[state.dtype]) : String(text);
    const least = name in sub.least ? sub.least[name] : 1;
    const x = NUMBERS.parseNumber(name, typed, info.integer, BigInt(least));
    if (info.integer) return x.n;
    return x.d === 1n ? x.n : { num: x.n, den: x.d };
  }

  /** α, β, γ, α_inter, β_inter: numbers of seconds, 0 or more, in the same grammar. */
  function timeValue(name, text) {
    return NUMBERS.toFloat(NUMBERS.parseNumber(name, String(text), false));
  }

  // ---- where each value comes from: typed, the model preset, the hardware preset, the page's start

  /** [L_first, L_last] the page opens with: symcomm.views.site.opening_split, the same rule (the middle chunks
   *  ⌊L/(p·v)⌋ layers each, the two ends the rest halved; one chunk: the whole model; two: L halved). */
  function openingSplit(layers, chunks) {
    if (!(chunks > 1)) return [layers, layers];
    if (chunks === 2) return [Math.floor(layers / 2), layers - Math.floor(layers / 2)];
    const ends = layers - (chunks - 2) * Math.floor(layers / chunks);
    return [Math.floor(ends / 2), ends - Math.floor(ends / 2)];
  }

  /** (text, where it comes from); the order of symcomm.views.site.opening_values, which the tests evaluate. */
  function valueText(name) {
    if (name in state.values) return [state.values[name], "typed"];
    const model = CAT.models[state.model];
    const sub = BY_IDENT.get(state.subject);
    if (model && name in model && sub.kind !== "primitive") return [String(model[name]), `model ${state.model}`];
    const hw = CAT.hardware[state.hardware];
    if (hw && name === "G") return [String(hw.G), `hardware ${state.hardware}`];
    if (hw && sub.two_level && (name === "N" || name === "M")) {
      // a two-level form runs on whole nodes: N the start value rounded up to a multiple of G (GB200 NVL72: 72),
      // M to a multiple of that N
      const startOf = (key) => BigInt(key in sub.start ? sub.start[key] : CAT.start[key]);
      const g = BigInt(hw.G);
      const n = ((startOf("N") + g - 1n) / g) * g;
      const value = name === "N" ? n : ((startOf("M") + n - 1n) / n) * n;
      return [String(value), `start value in whole nodes of hardware ${state.hardware}`];
    }
    if (name === "L_first" || name === "L_last") {
      const chunks = shownInteger("p") * (sub.params.includes("v") ? shownInteger("v") : 1);
      const split = openingSplit(shownInteger("L"), chunks);
      return [String(name === "L_first" ? split[0] : split[1]), "the balanced first/last split of L over p·v chunks"];
    }
    if (name in sub.start) return [String(sub.start[name]), `start value with ${variantLabel(sub)}`];
    return [String(CAT.start[name]), "start value"];
  }

  /** A shown integer's value read as eval reads it (p=2**2 is 4: Number() made it NaN), NaN where it does not read
   *  (its own box's check then says why). */
  function shownInteger(name) {
    try {
      return Number(NUMBERS.parseNumber(name, String(valueText(name)[0]), true, 0n).n);
    } catch (err) {
      return NaN;
    }
  }

  /** α, β, γ, α_inter, β_inter (per message, per byte) for a subject: typed, else the hardware's;
   *  a one-level algorithm on a group wider than a node runs at the network's α, β (as eval does). */
  function timeTexts(sub, values, names = sub.times) {
    const hw = CAT.hardware[state.hardware];
    const out = {};
    let note = "";
    for (const name of names) {
      if (name in state.times) { out[name] = [state.times[name], "typed"]; continue; }
      if (!hw) continue;
      let key = name;
      const wide = !sub.two_level && "N" in values && values.N > BigInt(hw.G);
      if (wide && sub.spreads && name === "beta") {
        // a ring's crossings spread over the NICs of its k ranks on a node, k the fewest a node holds, its node and
        // network legs at once (as eval: presets.link_values with nic_sharers, base.crossing.inter_shares and
        // leg_time, in the same order of operations)
        // its node leg is the fullest node's (min(N, G) ranks), its network leg the emptiest's (k)
        const g = BigInt(hw.G), rest = values.N % g;
        const k = Number(rest === 0n || values.N < g ? (values.N < g ? values.N : g) : rest);
        const full = Number(values.N < g ? values.N : g);
        const node = (full - 1) / full * hw.beta, network = 1 / k * hw.beta_inter;
        out[name] = [String(full === 1 ? network : Math.max(node, network)),
                     `hardware ${state.hardware} (the larger of ${full - 1}/${full} beta and 1/${k} beta_inter)`];
        note = `N=${values.N} spans nodes of ${hw.G} GPUs: a ring's crossings spread over the NICs of its ${k} ` +
               `ranks on a node, its two legs at once: α = α_inter, β = the larger of ${full - 1}/${full} β and ` +
               `1/${k} β_inter of ${state.hardware}`;
        continue;
      }
      if (wide && sub.peers && (name === "alpha" || name === "beta")) {
        // a pairwise all-to-all sends to k − 1 of its N − 1 peers on its node and N − k across, one-port (as eval:
        // presets.link_values with base.crossing.inter_shares, in the same order of operations)
        const g = BigInt(hw.G), rest = values.N % g;
        const k = Number(rest === 0n ? g : rest), n = Number(values.N);
        out[name] = [String((k - 1) / (n - 1) * hw[name] + (n - k) / (n - 1) * hw[name + "_inter"]),
                     `hardware ${state.hardware} (${k - 1}/${n - 1} ${name} + ${n - k}/${n - 1} ${name}_inter)`];
        note = `N=${values.N} spans nodes of ${hw.G} GPUs: a pairwise all-to-all sends to ${k - 1} of its ${n - 1} ` +
               `peers on its node and ${n - k} across: α, β = ${k - 1}/${n - 1} of the node's + ${n - k}/${n - 1} ` +
               `of the inter-node values of ${state.hardware}`;
        continue;
      }
      if (wide && (name === "alpha" || name === "beta")) {
        key = name + "_inter";
        if (!sub.spreads) note = `N=${values.N} spans nodes of ${hw.G} GPUs: α, β are the inter-node values of ${state.hardware}`;
      }
      out[name] = [String(hw[key]), `hardware ${state.hardware}` + (key !== name ? ` (${key})` : "")];
    }
    return [out, note];
  }

  // ---- a model preset's options: eval --model fills them (moe, gqa, attention, embeddings, ...) where they are not
  // typed, and a view prices its own (symcomm.views.site.model_clash and model_view, the same rules)

  /** {option: [the model's, the view's]} where this view prices other options than eval runs with the model. */
  function modelClash(sub) {
    const model = CAT.models[state.model];
    const out = {};
    if (!model || sub.kind === "primitive") return out;
    for (const [key, value] of Object.entries(model.options)) {
      if (key in sub.options && sub.options[key] !== value) out[key] = [value, sub.options[key]];
    }
    return out;
  }

  /** The view's options with the model's where they clash. */
  function modelOptions(sub) {
    const out = { ...sub.options };
    for (const [key, [ours]] of Object.entries(modelClash(sub))) out[key] = ours;
    return out;
  }

  /** The view of the subject's strategy with the model's options, or undefined where the page has none. */
  function modelView(sub) {
    const wanted = modelOptions(sub);
    const same = (a, b) => Object.keys(a).length === Object.keys(b).length && Object.entries(a).every(([k, v]) => b[k] === v);
    return CAT.subjects.find((s) => s.owner === sub.owner && same(s.options, wanted));
  }

  /** Throws where the view prices other options than the chosen model runs: its numbers would be another model's
   *  (the page priced Mixtral on the default view as a dense model with full-width K, V). */
  function refuseModelClash(sub) {
    const clash = Object.entries(modelClash(sub));
    if (!clash.length) return;
    const ours = clash.map(([k, [v]]) => `${k}=${v}`).join(", ");
    const theirs = clash.map(([k, [, v]]) => `${k}=${v}`).join(", ");
    const view = modelView(sub);
    const where = view ? `choose the options "${variantLabel(view)}"` :
      `the page has no view with ${variantLabel(sub)} and ${ours} (its views change one option from the defaults, ` +
      `and each model preset has one view of its own options): the command line below prices it`;
    throw new Error(`model ${state.model} runs ${ours}, as eval --model fills them; this view prices ${theirs}: ` +
                    `${where}, or choose no model preset`);
  }

  // ---- evaluating a subject

  /** {values, args, times} for a subject, or throws an Error with the message to show. */
  function argumentsOf(sub, override = {}) {
    const values = {};
    for (const name of sub.params) {
      const text = name in override ? override[name] : valueText(name)[0];
      values[name] = symbolValue(sub, name, text);
    }
    const [times] = timeTexts(sub, values);
    const args = { ...values, B_e: BigInt(CAT.dtypes[state.dtype]) };
    const complete = sub.times.every((name) => name in times);
    if (complete) for (const name of sub.times) args[name] = timeValue(name, times[name][0]);
    return { values, args, complete };
  }

  function evaluate(sub, args, complete) {
    const F = globalThis.SYMCOMM_FORMULAS;
    const out = {};
    for (const q of sub.quantities) {
      if (q === "time" && !complete) continue;
      out[q] = F[`${sub.ident}__${q}`](args);
    }
    return out;
  }

  // ---- formatting

  const group = (digits) => digits.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  const exactText = (x) => (typeof x === "bigint" ? x.toString() : typeof x === "number" ? String(x) : `${x.num}/${x.den}`);
  const toNumber = (x) => (typeof x === "number" ? x : typeof x === "bigint" ? Number(x) : Number(x.num) / Number(x.den));

  function humanBytes(n) {
    const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let i = 0;
    while (n >= 1024 && i < units.length - 1) { n /= 1024; i += 1; }
    return `${Number.isInteger(n) ? n : n.toPrecision(4)} ${i === 0 ? "B" : units[i]}`;
  }

  function humanTime(s, digits = 4) {
    if (s === 0) return "0 s";
    const steps = [[1, "s"], [1e-3, "ms"], [1e-6, "µs"], [1e-9, "ns"]];
    const [scale, unit] = steps.find(([scale]) => s >= scale * (1 - 1e-9)) || steps[steps.length - 1];
    return `${Number((s / scale).toPrecision(digits))} ${unit}`;
  }

  function shown(q, x) {
    if (q === "time") return humanTime(x);
    if (typeof x === "bigint") {
      const unit = CAT.units[q] || "";
      const text = group(x.toString()) + (unit ? ` ${unit}` : "");
      return unit.startsWith("bytes") && x >= 1024n ? `${text} (${humanBytes(Number(x))})` : text;
    }
    if (typeof x === "number") return x.toPrecision(6);
    return `${x.num}/${x.den} ≈ ${toNumber(x).toPrecision(6)}`;
  }

  // ---- drawing

  // ---- drawing in place: a render for a new point of the same view changes texts and values, not elements (new
  // rows, options and MathML for every point cost the hybrid view most of its ~140 ms per point in Chromium)

  /** Sets a node's text only when it differs: an unchanged text leaves the layout clean. */
  function setText(node, text) {
    if (node.textContent !== text) node.textContent = text;
  }

  const builtFor = new WeakMap();      // element → the key of what its children were built for

  /** Rebuilds ``parent``'s children with ``build()`` only when ``key`` differs from what they were built for. */
  function buildOnce(parent, key, build) {
    if (builtFor.get(parent) === key) return;
    parent.replaceChildren(...build());
    builtFor.set(parent, key);
  }

  function fillSelect(select, options, chosen) {
    buildOnce(select, JSON.stringify(options), () => options.map(([value, label]) => {
      const option = document.createElement("option");
      option.value = value;
      option.textContent = label;
      return option;
    }));
    select.value = chosen;
  }

  function owners(kind) {
    return [...new Set(CAT.subjects.filter((s) => s.kind === kind).map((s) => s.owner))];
  }

  function variantLabel(sub) {
    if (sub.kind === "primitive") return sub.algorithm;
    const changed = Object.entries(sub.changed);
    return changed.length ? changed.map(([k, v]) => `${k}=${v}`).join(", ") : "default options";
  }

  function drawChoices(sub) {
    $("kind").value = sub.kind;
    fillSelect($("owner"), owners(sub.kind).map((o) => [o, o]), sub.owner);
    $("owner-label").textContent = sub.kind === "primitive" ? "Primitive" : "Strategy";
    $("variant-label").textContent = sub.kind === "primitive" ? "Algorithm" : "Options (one changed at a time, or a model preset's own)";
    fillSelect($("variant"), CAT.subjects.filter((s) => s.owner === sub.owner).map((s) => [s.ident, variantLabel(s)]), sub.ident);
    fillSelect($("dtype"), Object.entries(CAT.dtypes).map(([k, v]) => [k, `${k} (${v} byte${v > 1 ? "s" : ""})`]), state.dtype);
    fillSelect($("hardware"), [["", "none: type α, β, γ"], ...Object.entries(CAT.hardware).map(([k, v]) => [k, `${k}: ${v.title}`])], state.hardware);
    fillSelect($("model"), [["", "none"], ...Object.entries(CAT.models).map(([k, v]) => [k, `${k}: ${v.title}`])], state.model);
    $("model-row").hidden = sub.kind === "primitive";
  }

  function inputRow(name, meaning, slider) {
    const row = document.createElement("tr");
    row.innerHTML = `<td class="symbol"></td><td><input type="text" spellcheck="false"></td><td class="slider"></td>` +
      `<td class="meaning"></td><td class="source"></td>`;
    row.querySelector(".symbol").textContent = GREEK[name] || name;
    const input = row.querySelector("input");
    input.id = `in-${name}`;
    input.setAttribute("aria-label", name);
    row.querySelector(".meaning").textContent = meaning;
    if (slider) {
      const range = document.createElement("input");
      range.type = "range";
      range.id = `range-${name}`;
      range.min = "0";
      range.max = "50";
      range.step = "1";
      range.title = `${name} = 2^k`;
      range.setAttribute("aria-label", `${name} as a power of two`);
      range.value = "0";
      row.querySelector(".slider").appendChild(range);
    }
    return row;
  }

  /** The symbols whose inputs the page shows: the subject's, then the step model's (F, h_kv, ...). */
  const shownParams = (sub) => sub.params.concat(sub.step ? sub.step.params : []);

  const TIME_MEANINGS = { alpha: "s per message", beta: "s per byte moved", gamma: "s per byte reduced",
                          alpha_inter: "s per inter-node message", beta_inter: "s per byte moved across nodes" };

  /** Moves a box's slider to the power of two nearest its text read as eval reads it (2**20, 1,024, 64MiB: Number()
   *  made them NaN and the slider stayed where it was); a text that does not read leaves it (the box's check says why). */
  function followSlider(name, text) {
    const range = $(`range-${name}`);
    if (!range) return;
    try {
      const typed = name === "M" ? NUMBERS.elementsText(String(text), state.dtype, CAT.dtypes[state.dtype]) : String(text);
      const k = Math.log2(Number(NUMBERS.parseNumber(name, typed, true, 0n).n));
      if (Number.isFinite(k)) range.value = String(Math.round(k));
    } catch (err) { /* not a number eval reads */ }
  }

  /** The input rows of the view (built once per view) showing where each value comes from.  ``redraw``: every box
   *  shows its value (a new view, a reset, a new preset or link); else the box being typed in keeps its text and the
   *  others follow what they come from (a changed N may switch α, β). */
  function drawInputs(sub, redraw) {
    const names = shownParams(sub);
    buildOnce($("params").tBodies[0], names.join(" "), () => names.map((name) => {
      const info = CAT.symbols[name];
      return inputRow(name, `${info.meaning} [${info.unit}]`, info.integer);
    }));
    buildOnce($("times").tBodies[0], sub.times.join(" "), () => sub.times.map((name) => inputRow(name, TIME_MEANINGS[name], false)));
    const update = (name, text, source) => {
      const input = $(`in-${name}`);
      if (input.value !== text && (redraw || document.activeElement !== input)) input.value = text;
      followSlider(name, input.value);
      setText(input.closest("tr").querySelector(".source"), source);
    };
    for (const name of names) update(name, ...valueText(name));
    let values = {};
    try { values = argumentsOf(sub).values; } catch (err) { values = {}; }
    const [times, note] = timeTexts(sub, values);
    for (const name of sub.times) update(name, ...(times[name] || ["", "type a value or choose a hardware preset"]));
    setText($("time-note"), note);
  }

  /** A table of quantities: rows built once per list of quantities, each row's cells filled for this point. */
  function drawQuantities(table, prefix, quantities, fill) {
    const body = table.tBodies[0];
    buildOnce(body, quantities.join(" "), () => quantities.map((q) => {
      const row = document.createElement("tr");
      row.innerHTML = `<td class="quantity"></td><td class="value"></td><td class="exact"></td><td class="meaning"></td>`;
      row.querySelector(".quantity").textContent = q;
      row.querySelector(".value").id = `${prefix}-${q}`;
      return row;
    }));
    for (const row of body.rows) fill(row.cells[0].textContent, row.cells[1], row.cells[2], row.cells[3]);
  }

  function drawResults(sub, results) {
    drawQuantities($("results"), "out", sub.quantities, (q, cell, exact, meaning) => {
      if (q in results) {
        cell.dataset.value = exactText(results[q]);
        setText(cell, shown(q, results[q]));
        setText(exact, exactText(results[q]));
      } else {
        delete cell.dataset.value;
        setText(cell, q === "time" ? "give α, β, γ (or a hardware preset)" : "—");
        setText(exact, "");
      }
      setText(meaning, CAT.meanings[q] || "");
    });
  }

  function drawAbout(sub) {
    $("subject-title").textContent = sub.kind === "primitive" ? `${sub.owner} / ${sub.algorithm}` :
      `${sub.owner}${Object.keys(sub.changed).length ? " (" + variantLabel(sub) + ")" : ""}`;
    $("subject-summary").textContent = `${sub.title}. ${sub.summary}`;
    $("convention").textContent = `Convention: ${sub.convention}.`;
    const items = [["Source", sub.source], ["Requires", sub.requires.join("; ") || "nothing beyond the parameters' ranges"],
                   ["Options", Object.entries(sub.options).map(([k, v]) => `${k}=${v}`).join(", ") || "none"],
                   ["Same numbers on the command line", commandLine(sub)]];
    $("about").replaceChildren(...items.flatMap(([term, text]) => {
      const dt = document.createElement("dt");
      dt.textContent = term;
      const dd = document.createElement("dd");
      dd.textContent = text;
      return [dt, dd];
    }));
  }

  function commandLine(sub) {
    const words = ["symcomm", "eval", sub.owner];
    if (sub.kind === "primitive") words.push(`--algorithm ${sub.algorithm}`);
    // every option, the model's where the view's clash (the page then refuses the view: the command prices the model)
    else for (const [k, v] of Object.entries(modelOptions(sub))) words.push(`${k}=${v}`);
    if (state.model && sub.kind !== "primitive") words.push(`--model ${state.model}`);
    words.push(`--dtype ${state.dtype}`);
    if (state.hardware) words.push(`--hardware ${state.hardware}`);
    // with a hardware preset the step section reads the step model's inputs (F, h_kv, V, ...) and the MLP's gating
    // too: the command gives them, or eval refuses it for want of them (an outsider's "missing F, V")
    const step = state.hardware && sub.step;
    for (const name of step ? shownParams(sub) : sub.params) words.push(`${name}=${valueText(name)[0]}`);
    if (step) words.push(`gated=${state.gated || (CAT.models[state.model] ? CAT.models[state.model].gated : "0")}`);
    for (const [name, text] of Object.entries(state.times)) if (sub.times.includes(name)) words.push(`${name}=${text}`);
    // a word holding a space (M=1 GiB) is one word of the shell only quoted
    return words.map((w) => (/^[^\s=]+=.*\s/.test(w) ? `'${w}'` : w)).join(" ") + " --json";
  }

  // a view's formulas do not change with its values: parsed and laid out again for every point, the hybrid's
  // ~40 kB of MathML were the largest part of a render
  let formulasOf = null;
  function drawFormulas(sub) {
    if (formulasOf === sub.ident) return;
    const shownMath = (globalThis.SYMCOMM_MATHML || {})[sub.ident] || {};
    $("formula-time").innerHTML = shownMath.time || "";
    $("formula-send").innerHTML = shownMath.send || "";
    formulasOf = sub.ident;
  }

  // ---- the step time (hybrid layouts, with a hardware preset: what eval hybrid --hardware adds)

  const STEP_UNITS = { step_time: "s", compute_time: "s", comm_time: "s", exposed_comm_time: "s", bubble_time: "s",
                       optimizer_time: "s", tokens_per_second: "tokens/s", mfu: "ratio", mfu_causal: "ratio",
                       hfu: "ratio", hfu_causal: "ratio",
                       model_flops: "FLOP per step, all GPUs", hardware_flops: "FLOP per step, all GPUs",
                       memory_per_gpu: "bytes", bubble_fraction_of_step: "ratio" };

  function stepUnit(q) {
    if (q in STEP_UNITS) return STEP_UNITS[q];
    return q.startsWith("memory_") || q.startsWith("stage_bytes_") ? "bytes" : "s";   // stage_slot_*: seconds
  }

  function stepShown(q, x) {
    const unit = stepUnit(q);
    if (unit === "s") return humanTime(x);
    if (unit === "bytes") return `${humanBytes(x)}`;
    if (unit === "ratio") return `${(100 * x).toPrecision(4)} %`;
    return `${x.toPrecision(6)} ${unit}`;
  }

  /** {quantity: Number} of the step model, or throws an Error with what to show. */
  function stepOf(sub) {
    const hw = CAT.hardware[state.hardware];
    if (!hw) throw new Error("choose a hardware preset: the step time needs its peak FLOP/s, HBM bandwidth and its step-time constants η, κ");
    // as eval: the hardware's peak at the dtype, or under a low precision the bf16 peak and peak_fp8, eta_fp8
    // (nvfp4: peak_fp4, eta_fp4)
    const precision = sub.options.precision || "bf16";
    const refused = CAT.element_refusals[`${state.dtype}|${precision}`];
    if (refused) throw new Error(refused);
    const compute = precision === "bf16" ? hw.compute[state.dtype] : hw.compute_precision[precision];
    if (compute.error) throw new Error(compute.error);
    const { args } = argumentsOf(sub);
    for (const name of sub.step.params) args[name] = symbolValue(sub, name, valueText(name)[0]);
    const [times] = timeTexts(sub, args, TIME_NAMES);
    for (const name of TIME_NAMES) args[name] = timeValue(name, times[name][0]);
    Object.assign(args, compute);
    const model = CAT.models[state.model];
    if (model && model.q_width && model.q_width !== "h") {
      throw new Error(`${state.model}'s query heads are wider than h/a (q_width=${model.q_width}, as eval --model ` +
                      "fills it): the page's step model counts them h wide; the command line below prices it");
    }
    const gated = state.gated || (model ? model.gated : "0");
    // as eval --model fills it (Model.dropout); without a model the step model's default
    const dropout = model ? model.dropout : "1";
    $("step-constants").textContent = `peak ${compute.peak.toExponential(4)} FLOP/s (${state.dtype}), HBM ${compute.hbm.toExponential(4)} B/s, ` +
      `η = ${compute.eta}, κ = ${compute.kappa} (hardware ${state.hardware}); gated=${gated}, dropout=${dropout}`;
    return globalThis.SYMCOMM_FORMULAS[`${sub.ident}__step_gated_${gated}_dropout_${dropout}`](args);
  }

  /** [fits, off by]: eval's memory verdict (fit_errors.fits_over_error and fits_words, the same rule and words) and
   *  its "off by" (fit_errors.step_error_words of the hardware's fit, from the catalog) for the step shown; the page
   *  showed a step time and a memory with neither. */
  function stepVerdicts(sub, step) {
    const hw = CAT.hardware[state.hardware];
    const band = CAT.memory_band;
    const need = step.memory_per_gpu, have = hw.memory_bytes;
    let fits;
    const uncounted = CAT.memory_uncounted[`${state.dtype}|${sub.options.precision}`];
    if (uncounted) {
      fits = `unknown: ${uncounted}`;
    } else if (have === null || have === undefined) {
      fits = "unknown: the hardware gives no memory_bytes per GPU";
    } else {
      const over = !band ? null : need / (1 + band.lowest) <= have ? "yes" : need / (1 + band.highest) > have ? "no" : "uncertain";
      const yes = need <= have;
      fits = `${yes ? (over === "uncertain" ? "yes by the model's count, uncertain within its measured error" : "yes") : "NO"}: ` +
             `${humanBytes(need)} ${yes ? "≤" : ">"} the GPU's ${humanBytes(have)}, by the model's count of live bytes ` +
             "(the caching allocator's own blocks come on top)";
      if (band) {
        fits += `; ${band.words[sub.options.framework]}: ` + (yes ? (over === "uncertain" ? "at the high end it would not fit" :
          "it fits at the high end too") : (over === "uncertain" ? "at the low end it would fit" : "it does not fit at the low end either"));
      }
    }
    const index = hw.step_errors[sub.step.error_key];
    const measured = CAT.dtype_measured[`${state.dtype}|${sub.options.precision}`];
    const off = measured && index !== undefined ? CAT.error_texts[index] + (state.model ?
      ` (eval --model ${state.model} adds the error on that model's own published runs)` : "") : CAT.error_unknown;
    return [fits, off];
  }

  async function drawStep(sub, ok) {
    const section = $("step-section");
    section.hidden = !sub.step;
    if (!sub.step) return;
    $("gated").value = state.gated;
    let step = {}, message = "";
    try {
      if (!ok) throw new Error("the step time needs the communication above: fix what the message above says");
      await load(sub.step.file);
      step = stepOf(sub);
    } catch (err) {
      message = err.message;
    }
    $("step-error").hidden = !message;
    $("step-error").textContent = message;
    $("step-verdicts").hidden = !("step_time" in step);
    if ("step_time" in step) {
      const [fits, off] = stepVerdicts(sub, step);
      setText($("step-fits"), fits);
      setText($("step-off-by"), off);
    }
    // an uneven split has a middle stage only from p = 3 on: eval reports none below (steptime.report), nor does the page
    const middle = !shownParams(sub).includes("p") || shownInteger("p") >= 3;
    const shown = sub.step.quantities.filter((q) => q in step && (middle || !/^stage_(slot|bytes)_(.*_)?middle$/.test(q)));
    drawQuantities($("step"), "step", shown, (q, cell, exact, unit) => {
      cell.dataset.value = String(step[q]);
      setText(cell, stepShown(q, step[q]));
      setText(exact, String(step[q]));
      setText(unit, stepUnit(q));
    });
  }

  // ---- the chart: time against message size for every algorithm of the primitive, log-log

  const PALETTE = ["#0b5fa5", "#c2410c", "#15803d", "#7e22ce", "#b91c1c", "#0e7490", "#a16207", "#be185d", "#4d7c0f", "#374151"];
  const DASHES = ["", "6 3", "2 2", "8 3 2 3", "1 3", "10 4", "4 2 1 2", "3 5", "12 2 2 2", "5 1"];
  const SIZES = Array.from({ length: 35 }, (_, k) => 2n ** BigInt(k));   // M = 1 ... 2^34 elements

  /** [bytes, seconds] of the algorithm at M elements, or null without time constants; throws where M breaks a
   *  requirement. */
  function pointAt(sub, M) {
    const { args, complete } = argumentsOf(sub, { M: M.toString() });
    if (!complete) return null;
    return [Number(M * args.B_e), globalThis.SYMCOMM_FORMULAS[`${sub.ident}__time`](args)];
  }

  /** {points, missing, refused}: [bytes, seconds] at each size, null where the size breaks a requirement of the
   *  algorithm (a gap in its line); missing: no time constants; refused: the first refusal's message. Where a power
   *  of two is refused, the multiple of N next above it is tried: with N = 6 an algorithm needing N | M had no point,
   *  its line was dropped, and the chart said the time constants were missing. */
  function series(sub) {
    const points = [];
    let refused = "";
    let N = null;
    try { N = sub.params.includes("N") ? symbolValue(sub, "N", valueText("N")[0]) : null; } catch (err) { /* said above */ }
    for (const size of SIZES) {
      let point = null;
      try {
        point = pointAt(sub, size);
        if (point === null) return { points: [], missing: true, refused };
      } catch (err) {
        refused = refused || err.message;
        const multiple = N ? ((size + N - 1n) / N) * N : size;
        try { point = multiple !== size ? pointAt(sub, multiple) : null; } catch (again) { point = null; }
      }
      points.push(point);
    }
    return { points, missing: false, refused };
  }

  function drawChart(sub) {
    const section = $("chart-section");
    section.hidden = sub.kind !== "primitive";
    if (section.hidden) return;
    $("chart-primitive").textContent = sub.owner;
    const subs = CAT.subjects.filter((s) => s.owner === sub.owner);
    const drawn = subs.map((s) => [s, series(s)]);
    const lines = drawn.map(([s, line]) => [s, line.points]);
    const ys = lines.flatMap(([, pts]) => pts.filter((p) => p && p[1] > 0).map((p) => p[1]));
    const W = 760, H = 380, left = 64, right = 190, top = 12, bottom = 40;
    const svg = [];
    const ns = 'xmlns="http://www.w3.org/2000/svg"';
    if (!ys.length) {
      const why = drawn.some(([, line]) => line.missing) ? "give α, β, γ or a hardware preset" :
        (drawn.find(([, line]) => line.refused) || [null, { refused: "no size has a positive time" }])[1].refused;
      $("chart").innerHTML = `<svg ${ns} viewBox="0 0 ${W} 60"><text x="10" y="30"></text></svg>`;
      $("chart").querySelector("text").textContent = `no time to draw: ${why}`;     // the message is text, not markup
      return;
    }
    const B = Number(CAT.dtypes[state.dtype]);
    const x0 = Math.log2(B), x1 = Math.log2(B) + 34;
    const y0 = Math.floor(Math.log10(Math.min(...ys))), y1 = Math.ceil(Math.log10(Math.max(...ys)));
    const X = (bytes) => left + (Math.log2(bytes) - x0) / (x1 - x0) * (W - left - right);
    const Y = (t) => top + (y1 - Math.log10(t)) / Math.max(1, y1 - y0) * (H - top - bottom);
    svg.push(`<svg ${ns} viewBox="0 0 ${W} ${H}" role="img" aria-label="time against message size">`);
    for (let k = Math.ceil(x0 / 10) * 10; k <= x1; k += 10) {
      svg.push(`<line class="grid" x1="${X(2 ** k)}" x2="${X(2 ** k)}" y1="${top}" y2="${H - bottom}"/>`);
      svg.push(`<text x="${X(2 ** k)}" y="${H - bottom + 16}" text-anchor="middle">${humanBytes(2 ** k)}</text>`);
    }
    for (let e = y0; e <= y1; e += 1) {
      svg.push(`<line class="grid" x1="${left}" x2="${W - right}" y1="${Y(10 ** e)}" y2="${Y(10 ** e)}"/>`);
      svg.push(`<text x="${left - 6}" y="${Y(10 ** e) + 4}" text-anchor="end">${humanTime(10 ** e, 3)}</text>`);
    }
    svg.push(`<line class="axis" x1="${left}" x2="${W - right}" y1="${H - bottom}" y2="${H - bottom}"/>`);
    svg.push(`<line class="axis" x1="${left}" x2="${left}" y1="${top}" y2="${H - bottom}"/>`);
    svg.push(`<text x="${(left + W - right) / 2}" y="${H - 6}" text-anchor="middle">message size (bytes of ${state.dtype}, M × B_e)</text>`);
    lines.forEach(([s, pts], i) => {
      let d = "", pen = false;
      for (const p of pts) {
        if (!p || !(p[1] > 0)) { pen = false; continue; }
        d += `${pen ? "L" : "M"}${X(p[0]).toFixed(1)},${Y(p[1]).toFixed(1)}`;
        pen = true;
      }
      const color = PALETTE[i % PALETTE.length], dash = DASHES[i % DASHES.length];
      svg.push(`<path d="${d}" fill="none" stroke="${color}" stroke-width="1.8"${dash ? ` stroke-dasharray="${dash}"` : ""} data-algorithm="${s.algorithm}"/>`);
      const ly = top + 14 + i * 18;
      svg.push(`<line x1="${W - right + 12}" x2="${W - right + 40}" y1="${ly - 4}" y2="${ly - 4}" stroke="${color}" stroke-width="1.8"${dash ? ` stroke-dasharray="${dash}"` : ""}/>`);
      // an algorithm with no point at any size says so in its legend (its line is not silently missing)
      const none = d ? "" : " (no size)";
      svg.push(`<text x="${W - right + 46}" y="${ly}"${s.ident === sub.ident ? ' font-weight="bold"' : ""}>${s.algorithm}${none}</text>`);
    });
    try {
      const { values } = argumentsOf(sub);
      const bytes = Number(values.M) * B;
      if (bytes >= 2 ** x0 && bytes <= 2 ** x1) {
        svg.push(`<line class="now" x1="${X(bytes)}" x2="${X(bytes)}" y1="${top}" y2="${H - bottom}"><title>M now</title></line>`);
      }
    } catch (err) { /* the error box says why */ }
    svg.push("</svg>");
    $("chart").innerHTML = svg.join("");
  }

  // ---- one render: inputs → results, formulas, chart, the URL

  let renders = 0;
  let shownSubject = "";
  let latest = 0;      // the newest render: one still waiting for its script when another starts draws nothing

  async function render(redrawInputs) {
    const mine = ++latest;
    document.body.dataset.state = "loading";
    const sub = BY_IDENT.get(state.subject);
    try {
      await load(sub.file);
    } catch (err) {
      if (mine !== latest) return;
      $("loading").hidden = true;
      showError(`${err.message}: open this page from its folder (docs/site/) so that formulas/ is beside it`);
      document.body.dataset.state = "error";
      return;
    }
    if (mine !== latest) return;
    drawChoices(sub);
    drawInputs(sub, redrawInputs || shownSubject !== sub.ident);
    shownSubject = sub.ident;
    let results = {}, ok = false;
    try {
      refuseModelClash(sub);
      const { args, complete } = argumentsOf(sub);
      results = evaluate(sub, args, complete);
      showError("");
      ok = true;
    } catch (err) {
      showError(err.message);
    }
    drawResults(sub, results);
    await drawStep(sub, ok);
    if (mine !== latest) return;
    $("loading").hidden = true;
    drawAbout(sub);
    drawFormulas(sub);
    drawChart(sub);
    writeHash();
    renders += 1;
    document.body.dataset.renders = String(renders);
    document.body.dataset.subject = sub.ident;
    document.body.dataset.state = "ready";
    // the first render's moment, for python -m symcomm.tools.pagespeed (a mark costs nothing when nobody reads it)
    if (renders === 1) performance.mark("symcomm-first-render");
  }

  function showError(message) {
    $("error").hidden = !message;
    $("error").textContent = message;
  }

  // ---- the page's own inputs

  function choose(ident) {
    state.subject = ident;
    render(true);
  }

  $("kind").addEventListener("change", (event) => {
    choose(CAT.subjects.find((s) => s.kind === event.target.value).ident);
  });
  $("owner").addEventListener("change", (event) => {
    choose(CAT.subjects.find((s) => s.owner === event.target.value).ident);
  });
  $("variant").addEventListener("change", (event) => choose(event.target.value));
  $("reset").addEventListener("click", () => {
    state.values = {};
    state.times = {};
    render(true);
  });
  for (const key of ["dtype", "hardware", "model", "gated"]) {
    $(key).addEventListener("change", (event) => {
      state[key] = event.target.value;
      // a model chosen opens the view of its options where the page has one (Mixtral: moe=1, gqa=1, embeddings=1)
      const view = key === "model" ? modelView(BY_IDENT.get(state.subject)) : undefined;
      if (view) state.subject = view.ident;
      render(true);
    });
  }

  document.addEventListener("input", (event) => {
    const id = event.target.id || "";
    if (id.startsWith("range-")) {
      const name = id.slice("range-".length);
      const text = (2n ** BigInt(event.target.value)).toString();
      state.values[name] = text;
      $(`in-${name}`).value = text;
      render(false);
    } else if (id.startsWith("in-")) {
      const name = id.slice("in-".length);
      (TIME_NAMES.includes(name) ? state.times : state.values)[name] = event.target.value;
      followSlider(name, event.target.value);
      render(false);
    }
  });

  window.addEventListener("hashchange", () => {
    const next = readHash();
    const before = JSON.stringify(state);
    if (JSON.stringify(next) !== before) {
      state = next;
      render(true);
    }
  });

  render(true);
})();
