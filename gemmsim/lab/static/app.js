// gemmsim labs: the page only draws. Every number comes from the JSON API (gemmsim.lab.api), served by
// `gemmsim lab`, or from the precomputed grid a `gemmsim lab --static` page embeds in window.LAB_DATA.
"use strict";

const STATIC = window.LAB_DATA || null;
const $ = (id) => document.getElementById(id);

// ---------------------------------------------------------------- data source
function queryKey(lab, params) {
  const keys = Object.keys(params).sort();
  return lab + "?" + keys.map((k) => encodeURIComponent(k) + "=" + encodeURIComponent(params[k])).join("&");
}

async function getLab(lab, params) {
  if (STATIC) {
    const hit = STATIC[queryKey(lab, params)];
    if (!hit) throw new Error("This case is not in the page's precomputed grid. Run `gemmsim lab` for any case.");
    return hit;
  }
  const res = await fetch("/api/" + queryKey(lab, params));
  const body = await res.json();
  if (!res.ok) throw new Error(body.error || res.statusText);
  return body;
}

// ---------------------------------------------------------------- formatting
const pct = (x) => (x === null || x === undefined ? "–" : (100 * x).toFixed(1) + " %");
function si(x, unit) {
  if (x === null || x === undefined || !isFinite(x)) return "–";
  const p = [["T", 1e12], ["G", 1e9], ["M", 1e6], ["k", 1e3]];
  for (const [s, v] of p) if (Math.abs(x) >= v) return (x / v).toPrecision(3) + " " + s + unit;
  return x.toPrecision(3) + " " + unit;
}
function bytes(x) {
  if (x === null || x === undefined) return "–";
  const u = [["GiB", 2 ** 30], ["MiB", 2 ** 20], ["KiB", 2 ** 10]];
  for (const [s, v] of u) if (x >= v) return (x / v).toPrecision(3) + " " + s;
  return x + " B";
}
function secs(x) {
  if (x === null || x === undefined) return "–";
  if (x >= 1) return x.toPrecision(3) + " s";
  if (x >= 1e-3) return (x * 1e3).toPrecision(3) + " ms";
  if (x >= 1e-6) return (x * 1e6).toPrecision(3) + " µs";
  return (x * 1e9).toPrecision(3) + " ns";
}
function setText(id, text, value) {
  const el = $(id);
  el.textContent = text;
  if (value !== undefined) el.dataset.value = String(value);
}

// ---------------------------------------------------------------- a small plotting helper (canvas)
function plot(canvas, o) {
  const ctx = canvas.getContext("2d");
  const W = canvas.width, H = canvas.height, L = o.left || 62, R = 14, T = 22, B = 40;
  ctx.clearRect(0, 0, W, H);
  ctx.font = "12px sans-serif";
  const tx = o.xlog ? Math.log10 : (v) => v, ty = o.ylog ? Math.log10 : (v) => v;
  const [x0, x1] = o.xrange.map(tx), [y0, y1] = o.yrange.map(ty);
  const X = (v) => L + ((tx(v) - x0) / (x1 - x0)) * (W - L - R);
  const Y = (v) => H - B - ((ty(v) - y0) / (y1 - y0)) * (H - T - B);
  ctx.strokeStyle = "#ccd3de"; ctx.fillStyle = "#5d6677"; ctx.lineWidth = 1;
  const ticks = (lo, hi, log) => {
    const out = [];
    if (log) {
      const mult = hi - lo < 2.5 ? [1, 2, 5] : [1];
      for (let e = Math.floor(lo); e <= Math.ceil(hi); e++) for (const m of mult) { const v = m * 10 ** e; if (Math.log10(v) >= lo && Math.log10(v) <= hi) out.push(v); }
    }
    else { const step = niceStep((hi - lo) / 6); for (let v = Math.ceil(lo / step) * step; v <= hi + 1e-9; v += step) out.push(v); }
    return out;
  };
  for (const v of o.xticks || ticks(x0, x1, o.xlog)) {
    ctx.beginPath(); ctx.moveTo(X(v), T); ctx.lineTo(X(v), H - B); ctx.stroke();
    ctx.textAlign = "center"; ctx.fillText(o.xfmt ? o.xfmt(v) : fmtTick(v), X(v), H - B + 14);
  }
  for (const v of ticks(y0, y1, o.ylog)) {
    ctx.beginPath(); ctx.moveTo(L, Y(v)); ctx.lineTo(W - R, Y(v)); ctx.stroke();
    ctx.textAlign = "right"; ctx.fillText(o.yfmt ? o.yfmt(v) : fmtTick(v), L - 4, Y(v) + 4);
  }
  ctx.fillStyle = "#1d2330"; ctx.textAlign = "center"; ctx.fillText(o.xlabel, (L + W - R) / 2, H - 8);
  ctx.save(); ctx.translate(12, (T + H - B) / 2); ctx.rotate(-Math.PI / 2); ctx.fillText(o.ylabel, 0, 0); ctx.restore();
  for (const v of o.vlines || []) {
    ctx.strokeStyle = v.color || "#888"; ctx.setLineDash([5, 4]);
    ctx.beginPath(); ctx.moveTo(X(v.x), T); ctx.lineTo(X(v.x), H - B); ctx.stroke(); ctx.setLineDash([]);
    const edge = X(v.x) > W - R - 80;  // near the right edge: label on the line's left
    ctx.fillStyle = v.color || "#555"; ctx.textAlign = edge ? "right" : "left"; ctx.fillText(v.label, X(v.x) + (edge ? -3 : 3), H - B - 6);
  }
  let ly = T + 4;
  for (const s of o.series) {
    ctx.strokeStyle = s.color; ctx.lineWidth = s.width || 2; ctx.beginPath();
    s.pts.forEach(([x, y], i) => {
      if (i === 0) ctx.moveTo(X(x), Y(y));
      else if (s.step) { ctx.lineTo(X(x), Y(s.pts[i - 1][1])); ctx.lineTo(X(x), Y(y)); }
      else ctx.lineTo(X(x), Y(y));
    });
    ctx.stroke();
    if (s.dots) for (const [x, y] of s.pts) { ctx.fillStyle = s.color; ctx.beginPath(); ctx.arc(X(x), Y(y), 2.5, 0, 7); ctx.fill(); }
    if (s.label) { ctx.fillStyle = s.color; ctx.textAlign = "left"; ctx.fillText(s.label, L + 6, (ly += 14)); }
  }
  for (const p of o.points || []) {
    ctx.fillStyle = p.color; ctx.strokeStyle = "#1d2330"; ctx.lineWidth = 1; ctx.beginPath();
    if (p.shape === "tri") { ctx.moveTo(X(p.x), Y(p.y) - 6); ctx.lineTo(X(p.x) - 5.5, Y(p.y) + 4); ctx.lineTo(X(p.x) + 5.5, Y(p.y) + 4); ctx.closePath(); }
    else ctx.arc(X(p.x), Y(p.y), p.r || 5, 0, 7);
    ctx.fill(); ctx.stroke();
    if (p.label) {
      const right = X(p.x) > W - 170;  // near the right edge: write the label to the left of the point
      ctx.fillStyle = "#1d2330"; ctx.textAlign = right ? "right" : "left";
      ctx.fillText(p.label, X(p.x) + (right ? -8 : 7), Y(p.y) - 6 + (p.dy || 0));
    }
  }
  ctx.lineWidth = 1;
}
function niceStep(raw) {
  const e = 10 ** Math.floor(Math.log10(raw || 1)), f = raw / e;
  return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * e;
}
function fmtTick(v) {
  if (v >= 1e6 || (v > 0 && v < 1e-2)) { const e = Math.round(Math.log10(v)); if (Math.abs(10 ** e - v) < 1e-9 * v) return "1e" + e; }
  return String(+v.toPrecision(4));
}
const span = (vals, pad) => {
  const lo = Math.min(...vals), hi = Math.max(...vals);
  return [lo / pad, hi * pad];
};

// ---------------------------------------------------------------- forms
function formParams(form) {
  const p = {};
  for (const el of form.elements) if (el.name && !("local" in el.dataset)) p[el.name] = String(el.value).trim();
  return p;
}
function applyPreset(form, preset) {
  for (const [k, v] of Object.entries(preset)) if (form.elements[k]) form.elements[k].value = String(v);
}

const LABS = {};
const state = { ready: {} };

async function refresh(lab) {
  const form = document.querySelector(`form[data-lab="${lab}"]`);
  const section = $("lab-" + lab);
  const params = LABS[lab].params ? LABS[lab].params(form) : formParams(form);
  const ticket = (state[lab + "_ticket"] = (state[lab + "_ticket"] || 0) + 1);
  section.classList.add("busy");
  section.dataset.ready = "0";
  try {
    const data = await getLab(lab, params);
    if (ticket !== state[lab + "_ticket"]) return;
    $(lab + "-error").textContent = "";
    LABS[lab].render(data);
  } catch (err) {
    if (ticket !== state[lab + "_ticket"]) return;
    $(lab + "-error").textContent = String(err.message || err);
  } finally {
    if (ticket === state[lab + "_ticket"]) {
      section.classList.remove("busy");
      section.dataset.ready = String(ticket);
    }
  }
}

// ---------------------------------------------------------------- 1. cache lab
const cache = { data: null, i: 0, playing: false, timer: null };
const COLORS = { in: "#cfe0fb", line: "#e3a008", hit: "#2e9b4f", miss: "#d1453b", ev: "#bbbbbb", grid: "#e3e7ee" };

function cacheStateAt(i) {
  // the sets' contents after access i, from the model's per-access "set after" lists
  const d = cache.data, sets = {};
  for (let j = 0; j <= i; j++) for (const [s, lines] of Object.entries(d.steps[j][7])) sets[s] = lines;
  return sets;
}

function drawCache() {
  const d = cache.data, i = cache.i, st = d.steps[i];
  const cv = $("cache-canvas"), ctx = cv.getContext("2d");
  const n = Math.max(d.M, d.N, d.K), gap = 28, cw = Math.max(3, Math.floor(Math.min((cv.width - 2 * gap) / 3, 300) / n));
  if (cv.height !== n * cw + 26) cv.height = n * cw + 26;
  ctx.clearRect(0, 0, cv.width, cv.height);
  const origin = { A: [0, 20], B: [n * cw + gap, 20], C: [2 * (n * cw + gap), 20] };
  const dims = { A: [d.M, d.K], B: [d.K, d.N], C: [d.M, d.N] };
  const fill = (m, r, c, color) => { const [ox, oy] = origin[m]; ctx.fillStyle = color; ctx.fillRect(ox + c * cw, oy + r * cw, cw, cw); };
  const sets = cacheStateAt(i);
  const inCache = new Set();
  for (const lines of Object.values(sets)) for (const [id] of lines) inCache.add(id);
  for (const id of inCache) for (const [m, r, c] of d.lines[id].cells) fill(m, r, c, COLORS.in);
  for (const [id] of st[6]) for (const [m, r, c] of d.lines[id].cells) fill(m, r, c, COLORS.ev);
  if (st[1] !== "-") fill(st[1], st[2], st[3], st[4] === 0 ? COLORS.hit : COLORS.miss);
  ctx.font = "13px sans-serif"; ctx.fillStyle = "#1d2330"; ctx.textAlign = "left";
  for (const m of ["A", "B", "C"]) {
    const [ox, oy] = origin[m], [rows, cols] = dims[m];
    ctx.fillText(`${m} (${rows}×${cols})`, ox, oy - 6);
    ctx.strokeStyle = COLORS.grid; ctx.lineWidth = 1;
    for (let r = 0; r <= rows; r++) { ctx.beginPath(); ctx.moveTo(ox, oy + r * cw); ctx.lineTo(ox + cols * cw, oy + r * cw); ctx.stroke(); }
    for (let c = 0; c <= cols; c++) { ctx.beginPath(); ctx.moveTo(ox + c * cw, oy); ctx.lineTo(ox + c * cw, oy + rows * cw); ctx.stroke(); }
  }
  ctx.strokeStyle = COLORS.line; ctx.lineWidth = 2.5;
  for (const [m, r, c] of d.lines[st[5]].cells) { const [ox, oy] = origin[m]; ctx.strokeRect(ox + c * cw + 1, oy + r * cw + 1, cw - 2, cw - 2); }
  ctx.lineWidth = 1;

  // numbers: running counts come from the model's per-access hits and misses
  const h = d.cum_hits[i], mi = d.cum_misses[i];
  setText("cache-stepno", String(i + 1), i + 1);
  setText("cache-running", pct(h / (h + mi)), h / (h + mi));
  setText("cache-hits", String(h), h);
  setText("cache-misses", String(mi), mi);
  const what = ["hit", "miss", "hit+miss"][st[4]];
  const el = st[1] === "-" ? "(outside A, B, C)" : `${st[1]}[${st[2]}][${st[3]}]`;
  setText("cache-access", `#${i + 1}: ${st[0] === "R" ? "read" : "write"} ${el} — ${what} (line ${d.lines[st[5]].label})`);
  setText("cache-evicted", st[6].length ? "evicted: " + st[6].map(([id, dirty]) => d.lines[id].label + (dirty ? " (dirty: written back)" : "")).join(", ") : "");
  const touched = Object.keys(st[7]);
  setText("cache-set", touched.join(", "));
  const ol = $("cache-contents");
  ol.innerHTML = "";
  for (const s of touched) for (const [id, dirty] of st[7][s]) {
    const li = document.createElement("li");
    li.textContent = d.lines[id].label + (dirty ? " *" : "");
    if (id === st[5]) li.style.fontWeight = "700";
    ol.appendChild(li);
  }
  $("cache-scrub").value = String(i);
}

function cacheGo(i) {
  if (!cache.data) return;
  cache.i = Math.max(0, Math.min(cache.data.steps.length - 1, i));
  drawCache();
}
function cacheStop() {
  cache.playing = false;
  if (cache.timer) clearInterval(cache.timer);
  cache.timer = null;
  $("cache-play").textContent = "▶ play";
}
function cachePlay() {
  if (cache.playing) return cacheStop();
  if (!cache.data) return;
  if (cache.i >= cache.data.steps.length - 1) cache.i = -1;
  cache.playing = true;
  $("cache-play").textContent = "❚❚ pause";
  cache.timer = setInterval(() => {
    const k = +$("cache-speed").value;
    if (cache.i + k >= cache.data.steps.length - 1) { cacheGo(cache.data.steps.length - 1); return cacheStop(); }
    cacheGo(cache.i + k);
  }, 60);
}

LABS.cache = {
  render(d) {
    cacheStop();
    cache.data = d;
    cache.i = 0;
    $("cache-scrub").max = String(d.steps.length - 1);
    setText("cache-shown", String(d.shown), d.shown);
    setText("cache-total", pct(d.totals.hit_rate), d.totals.hit_rate);
    setText("cache-total-acc", String(d.totals.accesses), d.totals.accesses);
    const c = d.cache;
    setText("cache-geom", `${c.lines} lines of ${c.line_elements} fp32 (${c.line_bytes} B) = ${c.sets} set(s) × ${c.ways} ways, ${c.policy.toUpperCase()}, write-back, write-allocate · ` +
      `${d.totals.misses} misses, ${d.totals.evictions} evictions, ${d.totals.writebacks} write-backs`);
    setText("cache-note", d.shown < d.total_accesses ? `The walk shows the first ${d.shown} of ${d.total_accesses} accesses; the whole-case line covers all of them.` : "");
    drawCache();
  },
};

// ---------------------------------------------------------------- 2. blocking lab
const LEVEL_COLORS = ["#2f6fd6", "#e3a008", "#2e9b4f", "#8a4fd1"];
LABS.blocking = {
  render(d) {
    const c = d.case;
    setText("blk-time", secs(c.time_s), c.time_s);
    setText("blk-gflops", c.gflops.toPrecision(3), c.gflops);
    setText("blk-peak", pct(c.peak_fraction), c.peak_fraction);
    setText("blk-bound", c.bound);
    setText("blk-ws", bytes(c.working_set_bytes), c.working_set_bytes);
    setText("blk-dram", bytes(c.dram_bytes), c.dram_bytes);
    const tb = $("blk-levels").tBodies[0];
    tb.innerHTML = "";
    c.levels.forEach((lv) => {
      const tr = tb.insertRow();
      tr.dataset.level = lv.name;
      const fits = lv.working_set_fraction <= 1;
      tr.innerHTML = `<td>${lv.name}</td><td>${bytes(lv.size)}</td><td style="color:${fits ? "#2e9b4f" : "#d1453b"}">${pct(lv.working_set_fraction)}</td>` +
        `<td data-value="${lv.hit_rate}">${pct(lv.hit_rate)}</td><td data-value="${lv.traffic_bytes}">${bytes(lv.traffic_bytes)}</td>`;
    });
    const sb = $("blk-sweep").tBodies[0];
    sb.innerHTML = "";
    for (const r of d.sweep) {
      const tr = sb.insertRow();
      tr.dataset.block = String(r.block);
      if (r.block === c.block) tr.style.fontWeight = "700";
      tr.innerHTML = `<td>${r.block}</td><td>${bytes(r.working_set_bytes)}</td><td>${pct(r.levels[0].hit_rate)}</td><td>${bytes(r.dram_bytes)}</td>` +
        `<td data-value="${r.time_s}">${secs(r.time_s)}</td><td>${r.gflops.toPrecision(3)}</td><td>${r.bound}</td>`;
    }
    const xs = d.sweep.map((r) => r.block);
    const series = d.sweep[0].levels.map((lv, k) => ({
      label: `${lv.name} → next level`, color: LEVEL_COLORS[k % 4], dots: true,
      pts: d.sweep.map((r) => [r.block, Math.max(1, r.levels[k].traffic_bytes)]),
    }));
    series[series.length - 1].label = `${d.sweep[0].levels[series.length - 1].name} → DRAM`;
    const all = series.flatMap((s) => s.pts.map((p) => p[1]));
    const xr = [Math.min(...xs) / 1.3, Math.max(...xs) * 1.3];
    plot($("blk-canvas"), {
      xlog: true, ylog: true, xrange: xr, yrange: span(all, 2), series,
      xlabel: "block size b (b×b×b blocks)", ylabel: "bytes moved to the next level",
      xfmt: (v) => String(v), yfmt: (v) => si(v, "B").replace(/\.0+ /, " "), xticks: xs, left: 70,
      vlines: d.crossings.filter((x) => x.block >= xr[0] && x.block <= xr[1]).map((x, k) => ({ x: x.block, label: `3b²s = ${x.name}`, color: LEVEL_COLORS[k % 4] })),
      points: [{ x: c.block, y: Math.max(1, c.levels[c.levels.length - 1].traffic_bytes), color: "#d1453b", r: 6, label: `b = ${c.block}` }],
    });
  },
};

// ---------------------------------------------------------------- 3. roofline lab
const roof = { file: {} };
LABS.roofline = {
  params(form) {
    const p = formParams(form);
    const ps = +form.elements.peak_s.value, bs = +form.elements.bw_s.value;
    const f = roof.file[p.machine + "/" + p.dtype];
    p.peak = ps !== 0 && f ? String(f.peak * 2 ** ps) : "";
    p.bw = bs !== 0 && f ? String(f.bw * 2 ** bs) : "";
    $("roof-peak-f").textContent = String(2 ** ps);
    $("roof-bw-f").textContent = String(2 ** bs);
    return p;
  },
  render(d) {
    roof.file[d.params.machine + "/" + d.params.dtype] = { peak: d.file_peak_gflops, bw: d.file_bw_gbps };
    setText("roof-ridge", d.ridge.toPrecision(4), d.ridge);
    setText("roof-peak", si(d.peak_gflops * 1e9, "FLOP/s"), d.peak_gflops);
    setText("roof-bw", si(d.bw_gbps * 1e9, "B/s"), d.bw_gbps);
    const tb = $("roof-ops").tBodies[0];
    tb.innerHTML = "";
    for (const o of d.ops) {
      const tr = tb.insertRow();
      tr.dataset.op = o.phase + "/" + o.op;
      tr.innerHTML = `<td>${o.phase}</td><td>${o.op}</td><td>${o.M}×${o.N}×${o.K} ×${o.count}</td><td data-value="${o.intensity}">${o.intensity.toPrecision(3)}</td>` +
        `<td data-value="${o.attainable_gflops}">${si(o.attainable_gflops * 1e9, "FLOP/s")}</td><td>${o.bound}</td>`;
    }
    const xi = d.ops.map((o) => o.intensity).concat([d.ridge]);
    const xr = [Math.min(...xi) / 4, Math.max(...xi) * 4];
    const roofPts = [];
    for (let k = 0; k <= 60; k++) { const x = xr[0] * (xr[1] / xr[0]) ** (k / 60); roofPts.push([x, Math.min(d.peak_gflops, x * d.bw_gbps)]); }
    roofPts.push([d.ridge, d.peak_gflops]); roofPts.sort((a, b) => a[0] - b[0]);
    const groups = [];
    for (const o of d.ops) {
      const g = groups.find((g) => g.phase === o.phase && Math.abs(Math.log10(g.x / o.intensity)) < 0.04);
      if (g) g.names.push(o.op); else groups.push({ phase: o.phase, x: o.intensity, y: o.attainable_gflops, names: [o.op] });
    }
    const seen = { prefill: 0, decode: 0 };
    const pts = groups.sort((a, b) => a.x - b.x).map((g) => ({ x: g.x, y: g.y, color: g.phase === "prefill" ? "#2f6fd6" : "#d1453b",
      shape: g.phase === "prefill" ? "dot" : "tri", label: g.names.join(", "),
      dy: g.phase === "prefill" ? 22 + 14 * (seen.prefill++ % 2) : -14 * (seen.decode++ % 2) }));
    plot($("roof-canvas"), {
      xlog: true, ylog: true, xrange: xr, yrange: [Math.min(...roofPts.map((p) => p[1])) / 2, d.peak_gflops * 3],
      series: [{ pts: roofPts, color: "#1d2330", width: 2.5, label: `roof: ${d.params.machine} ${d.params.dtype}; blue ● prefill, red ▲ decode` }],
      vlines: [{ x: d.ridge, label: "ridge " + d.ridge.toPrecision(3), color: "#888" }],
      points: pts, xlabel: "arithmetic intensity (FLOP per DRAM byte, ideal traffic)", ylabel: "attainable FLOP/s",
      yfmt: (v) => si(v * 1e9, "FLOP/s").replace(/\.0+ /, " "), left: 96,
    });
  },
};

// ---------------------------------------------------------------- 4. bank lab
LABS.bank = {
  render(d) {
    setText("bank-wavefronts", String(d.wavefronts), d.wavefronts);
    setText("bank-ideal", String(d.ideal), d.ideal);
    setText("bank-conflicts", String(d.conflicts), d.conflicts);
    const tb = $("bank-pads").tBodies[0];
    tb.innerHTML = "";
    for (const p of d.pads) {
      const tr = tb.insertRow();
      if (p.pad === d.params.pad) tr.style.fontWeight = "700";
      tr.innerHTML = `<td>[${d.params.rows}][${d.params.cols}+${p.pad}]</td><td data-value="${p.wavefronts}">${p.wavefronts}</td>`;
    }
    // the diagram: one column per bank; each distinct word a bank must deliver is one row; the lanes that
    // read it are written in it
    const cv = $("bank-canvas"), ctx = cv.getContext("2d");
    ctx.clearRect(0, 0, cv.width, cv.height);
    const nb = d.banks, words = {};
    d.lane_words.forEach((ws, lane) => ws.forEach((w) => { (words[w] = words[w] || []).push(lane); }));
    const perBank = Array.from({ length: nb }, () => []);
    for (const w of Object.keys(words).map(Number).sort((a, b) => a - b)) perBank[w % nb].push(w);
    const depth = Math.max(...perBank.map((b) => b.length));
    const L = 30, T = 34, bw = Math.floor((cv.width - L - 6) / nb), rh = Math.min(26, Math.floor((cv.height - T - 26) / Math.max(depth, 1)));
    ctx.font = "11px sans-serif"; ctx.textAlign = "center"; ctx.fillStyle = "#1d2330";
    ctx.fillText(`banks 0..${nb - 1} (${d.bank_bytes}-byte words); each row of a column is one more word that bank must deliver`, cv.width / 2, 12);
    for (let b = 0; b < nb; b++) {
      ctx.fillStyle = "#5d6677"; ctx.fillText(String(b), L + b * bw + bw / 2, T - 6);
      perBank[b].forEach((w, r) => {
        const lanes = words[w];
        ctx.fillStyle = r === 0 ? "#cfe0fb" : "#f3c2bd";
        ctx.fillRect(L + b * bw + 1, T + r * rh + 1, bw - 2, rh - 2);
        ctx.fillStyle = "#1d2330";
        if (rh >= 10) ctx.fillText(lanes.length > 2 ? `${lanes[0]}…` : lanes.join(","), L + b * bw + bw / 2, T + r * rh + rh / 2 + 4);
      });
    }
    ctx.textAlign = "right"; ctx.fillStyle = "#5d6677";
    for (let r = 0; r < depth; r += Math.max(1, Math.ceil(depth / 8))) ctx.fillText(String(r + 1), L - 4, T + r * rh + rh / 2 + 4);
    ctx.textAlign = "left"; ctx.fillStyle = "#1d2330";
    ctx.fillText(`deepest bank: ${depth} word(s); numbers are lanes; the model counts ${d.wavefronts} wavefront(s)`, L, T + depth * rh + 16);
  },
};

// ---------------------------------------------------------------- 5. wave lab
LABS.wave = {
  render(d) {
    setText("wave-waves", String(d.waves), d.waves);
    setText("wave-eff", pct(d.wave_efficiency), d.wave_efficiency);
    setText("wave-tiles", String(d.tiles), d.tiles);
    setText("wave-tgrid", `${d.tiles_m} × ${d.tiles_n}`);
    setText("wave-teff", pct(d.tile_efficiency), d.tile_efficiency);
    setText("wave-size", String(d.wave_size), d.wave_size);
    setText("wave-sms", String(d.sms), d.sms);
    setText("wave-tail", d.tail_blocks ? `${d.tail_blocks} of ${d.wave_size} blocks` : "full", d.tail_blocks);
    const s = d.stairs;
    const xs = s.map((p) => p.N).concat([d.params.N]);
    plot($("wave-canvas"), {
      xrange: [0, Math.max(...xs) * 1.02], yrange: [0, Math.max(...s.map((p) => p.waves)) + 1],
      series: [
        { pts: s.map((p) => [p.N, p.waves]), color: "#2f6fd6", step: true, label: "waves (time, latency-bound blocks)" },
        { pts: s.map((p) => [p.N, p.waves_fractional]), color: "#9fb0c9", width: 1, label: "tiles / wave size (ideal)" },
      ],
      points: [{ x: d.params.N, y: d.waves, color: "#d1453b", r: 6, label: `N = ${d.params.N}: ${d.waves} waves, ${pct(d.wave_efficiency)}` }],
      xlabel: `N (M = ${d.params.M}, ${d.params.BM}×${d.params.BN} tiles, ${d.params.machine})`, ylabel: "waves",
    });
    const cv = $("wave-fill"), ctx = cv.getContext("2d");
    ctx.clearRect(0, 0, cv.width, cv.height);
    const last = d.tail_blocks || d.wave_size, w = cv.width - 2;
    ctx.fillStyle = "#eef0f4"; ctx.fillRect(1, 8, w, 20);
    ctx.fillStyle = "#2f6fd6"; ctx.fillRect(1, 8, (w * last) / d.wave_size, 20);
    ctx.strokeStyle = "#5d6677"; ctx.strokeRect(1, 8, w, 20);
    ctx.fillStyle = "#1d2330"; ctx.font = "11px sans-serif"; ctx.fillText(`last wave: ${d.tail_blocks || d.wave_size} of ${d.wave_size} SM slots busy`, 4, 42);
  },
};

// ---------------------------------------------------------------- wiring
async function fillMenus() {
  let pre = null;
  try { pre = await getLab("presets", {}); } catch (e) { return; }
  for (const sel of document.querySelectorAll("select[data-options]")) {
    const cur = sel.value;
    sel.innerHTML = "";
    for (const n of pre[sel.dataset.options] || []) { const o = document.createElement("option"); o.textContent = n; sel.appendChild(o); }
    sel.value = cur;
  }
}

function showTab(name) {
  for (const b of document.querySelectorAll("#tabs button")) b.classList.toggle("active", b.dataset.tab === name);
  for (const s of document.querySelectorAll(".lab")) s.classList.toggle("active", s.id === "lab-" + name);
  if (!state.ready[name]) { state.ready[name] = true; refresh(name); }
  if (location.hash !== "#" + name) history.replaceState(null, "", "#" + name);
}

async function main() {
  $("source").textContent = STATIC ? "static page: precomputed cases only" : "live: gemmsim lab server";
  await fillMenus();
  for (const form of document.querySelectorAll("form.controls")) {
    const lab = form.dataset.lab;
    form.addEventListener("change", () => refresh(lab));
    form.addEventListener("submit", (e) => { e.preventDefault(); refresh(lab); });
    for (const b of form.querySelectorAll("button[data-preset]")) b.addEventListener("click", () => { applyPreset(form, JSON.parse(b.dataset.preset)); refresh(lab); });
  }
  for (const b of document.querySelectorAll("#tabs button")) b.addEventListener("click", () => showTab(b.dataset.tab));
  $("cache-first").onclick = () => { cacheStop(); cacheGo(0); };
  $("cache-back").onclick = () => { cacheStop(); cacheGo(cache.i - 1); };
  $("cache-next").onclick = () => { cacheStop(); cacheGo(cache.i + 1); };
  $("cache-last").onclick = () => { cacheStop(); cacheGo(cache.data ? cache.data.steps.length - 1 : 0); };
  $("cache-play").onclick = cachePlay;
  $("cache-scrub").oninput = (e) => { cacheStop(); cacheGo(+e.target.value); };
  window.addEventListener("hashchange", () => { const h = location.hash.slice(1); if (LABS[h]) showTab(h); });
  const first = (location.hash || "#cache").slice(1);
  showTab(LABS[first] ? first : "cache");
}

window.gemmsimLab = { refresh, showTab, queryKey };
main();
