// Egret console: the tracker's UI. Plain JavaScript, no build step, no
// external assets. Views (by location hash):
//   #/                                      clusters (aggregate) and topologies with health
//   #/topology/<cluster>/<topology>         health, actions, logical plan coloured by back
//                                           pressure and busy-ness, components, charts,
//                                           containers (CPU, memory), checkpoints, physical
//                                           plan, exceptions
//   #/component/<cluster>/<topology>/<c>    per-task table and per-task charts
//   #/exceptions/<cluster>/<topology>       exceptions grouped, with full text
//   #/logs/<cluster>/<topology>/<ct>/<file> a log as text: paging, search, follow
"use strict";

(function () {
  const POLL_MS = 2000;
  const SVG = "http://www.w3.org/2000/svg";
  let timer = null;
  let generation = 0; // views started; a stale poll stops itself
  let consoleState = { enabled: false };

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v == null) continue;
      if (k === "class") e.className = v;
      else if (k === "text") e.textContent = v;
      else if (k === "style") e.style.cssText = v; // CSSOM: allowed by the page's CSP, unlike a style attribute
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v);
    }
    for (const c of children) if (c != null) e.append(c);
    return e;
  }

  function svg(tag, attrs) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "style") e.style.cssText = v;
      else e.setAttribute(k, v);
    }
    return e;
  }

  async function api(path, params) {
    const q = new URLSearchParams(params || {});
    const res = await fetch(path + (q.toString() ? "?" + q : ""), { cache: "no-store" });
    const body = await res.json().catch(() => ({ error: res.statusText }));
    if (!res.ok) throw new Error(body.error || res.statusText);
    return body;
  }

  function fmt(v, digits) {
    if (v == null || Number.isNaN(v)) return "–";
    if (Math.abs(v) >= 1e6) return (v / 1e6).toFixed(1) + "M";
    if (Math.abs(v) >= 1e4) return (v / 1e3).toFixed(1) + "k";
    return v.toFixed(digits == null ? 1 : digits);
  }

  function bytes(v) {
    if (v == null || Number.isNaN(v)) return "–";
    const u = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0;
    while (Math.abs(v) >= 1024 && i < u.length - 1) { v /= 1024; i++; }
    return (i === 0 ? v.toFixed(0) : v.toFixed(1)) + " " + u[i];
  }

  function pct(v) {
    if (v == null) return "–";
    return (100 * v).toFixed(v > 0 && v < 0.1 ? 1 : 0) + "%";
  }

  function duration(s) {
    if (s == null) return "–";
    s = Math.floor(s);
    const d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600), m = Math.floor(s % 3600 / 60);
    if (d) return `${d}d ${h}h`;
    if (h) return `${h}h ${m}m`;
    if (m) return `${m}m ${s % 60}s`;
    return `${s}s`;
  }

  function when(unixSeconds) {
    if (!unixSeconds) return "–";
    return new Date(unixSeconds * 1000).toLocaleString();
  }

  function setStatus(text, bad) {
    const s = document.getElementById("status");
    s.textContent = text;
    s.classList.toggle("error", !!bad);
  }

  function stateBadge(state) {
    return el("span", { class: "state state-" + state, text: state });
  }

  function healthBadge(h) {
    return el("span", { class: "health health-" + h.level, "data-level": h.level, title: h.reasons.join("\n"), text: h.level });
  }

  function schedule(gen, fn, ms) {
    if (gen !== generation) return;
    clearTimeout(timer);
    timer = setTimeout(fn, ms || POLL_MS);
  }

  function card(title, id, ...rest) {
    return el("section", { class: "card", id: id ? id + "-card" : null }, el("h2", { text: title }), el("div", { id }), ...rest);
  }

  function table(id, headers, numeric) {
    const t = el("table", { id });
    t.append(el("thead", {}, el("tr", {}, ...headers.map((h, i) => el("th", { class: numeric && numeric(i) ? "num" : "", text: h })))));
    const tb = el("tbody");
    t.append(tb);
    return [t, tb];
  }

  function topoHash(view, cluster, name, ...rest) {
    return "#/" + [view, cluster, name, ...rest].map(encodeURIComponent).join("/");
  }

  // ---- landing: clusters and topologies

  async function listView(gen) {
    const main = document.getElementById("main");
    const clusters = el("section", { class: "card" }, el("h2", { text: "Clusters" }), el("div", { id: "clusters", class: "tiles" }));
    const topo = el("section", { class: "card" }, el("h2", { text: "Topologies" }));
    const [tableEl, tbody] = table("topologies", ["Cluster", "Topology", "Health", "State", "Role", "Environ", "Containers", "Instances", "Throughput (tuples/s)", "Submitted"],
      i => i >= 6 && i <= 8);
    topo.append(tableEl);
    main.replaceChildren(clusters, topo);
    async function refresh() {
      if (gen !== generation) return;
      try {
        const [cl, { topologies, problems }] = await Promise.all([api("/clusters"), api("/topologies")]);
        document.getElementById("clusters").replaceChildren(...cl.clusters.map(c => el("div", { class: "tile cluster", "data-cluster": c.name },
          el("h3", { text: c.name }),
          el("div", { class: "muted", text: `${c.scheduler} · ${c.statemgr}` }),
          el("dl", {},
            el("dt", { text: "topologies sampled" }), el("dd", { class: "agg-topologies", text: String(c.metrics.topologies) }),
            el("dt", { text: "throughput" }), el("dd", { class: "agg-throughput", text: fmt(c.metrics.throughput) + " /s" }),
            el("dt", { text: "executed" }), el("dd", { text: fmt(c.metrics.execute_rate) + " /s" }),
            el("dt", { text: "failed" }), el("dd", { text: fmt(c.metrics.fail_rate) + " /s" }),
            el("dt", { text: "CPU" }), el("dd", { class: "agg-cpu", text: fmt(c.metrics.cpu_cores, 2) + " cores" }),
            el("dt", { text: "memory" }), el("dd", { class: "agg-memory", text: bytes(c.metrics.rss_bytes) })))));
        const health = {};
        await Promise.all(topologies.filter(t => t.state === "running" || t.state === "deactivated").slice(0, 32).map(t =>
          api("/topologies/overview", { cluster: t.cluster, topology: t.name }).then(o => { health[t.cluster + "/" + t.name] = o.health; }).catch(() => {})));
        tbody.replaceChildren();
        for (const p of problems || []) {
          tbody.append(el("tr", { class: "cluster-problem" }, el("td", { text: p.cluster }), el("td", { colspan: "9", class: "error", text: p.error })));
        }
        if (topologies.length === 0) tbody.append(el("tr", {}, el("td", { colspan: "10", class: "muted", text: "No topologies." })));
        for (const t of topologies) {
          const h = health[t.cluster + "/" + t.name];
          tbody.append(el("tr", { "data-topology": t.name, "data-cluster": t.cluster },
            el("td", { text: t.cluster }), el("td", {}, el("a", { href: topoHash("topology", t.cluster, t.name), text: t.name })),
            el("td", {}, h ? healthBadge(h) : el("span", { class: "muted", text: "–" })),
            el("td", {}, stateBadge(t.state), t.problem ? el("div", { class: "muted", text: t.problem }) : null),
            el("td", { text: t.role || "–" }), el("td", { text: t.environ || "–" }),
            el("td", { class: "num", text: String(t.containers) }), el("td", { class: "num", text: String(t.instances) }),
            el("td", { class: "num throughput", text: fmt(t.throughput) }), el("td", { text: when(t.submitted_unix) })));
        }
        setStatus("updated " + new Date().toLocaleTimeString());
      } catch (e) {
        setStatus(e.message, true);
      }
      schedule(gen, refresh, 3000);
    }
    refresh();
  }

  // ---- logical plan DAG

  // layout assigns each component a layer (longest path from a spout) and
  // a row within the layer.
  function layout(plan) {
    const layer = {};
    const byName = {};
    for (const c of plan.components) { byName[c.name] = c; layer[c.name] = 0; }
    for (let round = 0; round < plan.components.length; round++) {
      let changed = false;
      for (const e of plan.edges) {
        if (byName[e.from] && byName[e.to] && layer[e.to] < layer[e.from] + 1) {
          layer[e.to] = layer[e.from] + 1;
          changed = true;
        }
      }
      if (!changed) break;
    }
    const layers = [];
    for (const c of plan.components) (layers[layer[c.name]] = layers[layer[c.name]] || []).push(c.name);
    const pos = {};
    const W = 170, H = 62, GX = 90, GY = 30;
    let rows = 0;
    layers.forEach((names, i) => {
      names.sort();
      rows = Math.max(rows, names.length);
      names.forEach((n, j) => { pos[n] = { x: 20 + i * (W + GX), y: 20 + j * (H + GY), w: W, h: H }; });
    });
    return { pos, width: 40 + layers.length * (W + GX) - GX, height: 40 + rows * (H + GY) - GY };
  }

  function drawDAG(plan, onClick) {
    const { pos, width, height } = layout(plan);
    const s = svg("svg", { class: "dag", id: "dag", viewBox: `0 0 ${width} ${height}`, height: String(height), style: `max-width:${width}px` });
    const defs = svg("defs");
    const marker = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: "10", refY: "5", markerWidth: "7", markerHeight: "7", orient: "auto" });
    marker.append(svg("path", { d: "M0,0 L10,5 L0,10 z" }));
    defs.append(marker);
    s.append(defs);
    const seen = {};
    for (const e of plan.edges) {
      const a = pos[e.from], b = pos[e.to];
      if (!a || !b) continue;
      const key = e.from + ">" + e.to;
      const k = seen[key] = (seen[key] || 0) + 1;
      const x1 = a.x + a.w, y1 = a.y + a.h / 2 + (k - 1) * 8, x2 = b.x, y2 = b.y + b.h / 2 + (k - 1) * 8;
      const mx = (x1 + x2) / 2;
      const g = svg("g", { class: "edge", "data-from": e.from, "data-to": e.to, "data-grouping": e.grouping });
      g.append(svg("path", { d: `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}`, "marker-end": "url(#arrow)" }));
      const label = svg("text", { x: String(mx), y: String((y1 + y2) / 2 - 5), "text-anchor": "middle" });
      let text = e.grouping + (e.fields && e.fields.length ? "(" + e.fields.join(",") + ")" : "");
      if (e.stream !== "default") text = e.stream + ": " + text;
      label.textContent = text;
      g.append(label);
      s.append(g);
    }
    for (const c of plan.components) {
      const p = pos[c.name];
      const g = svg("g", { class: "node " + c.kind, "data-component": c.name, transform: `translate(${p.x},${p.y})`, tabindex: "0" });
      g.append(svg("rect", { width: String(p.w), height: String(p.h), rx: "6" }));
      const t = svg("text", { x: "10", y: "18" });
      t.textContent = c.name;
      const sub = svg("text", { x: "10", y: "34", class: "sub" });
      sub.textContent = `${c.kind} × ${c.parallelism}`;
      const live = svg("text", { x: "10", y: "51", class: "sub live" });
      const title = svg("title");
      title.textContent = `${c.name}: ${c.kind}, ${c.parallelism} task(s); outputs ${c.outputs.map(o => o.id + "(" + o.fields.join(",") + ")").join(" ") || "none"}`;
      g.append(t, sub, live, title);
      g.addEventListener("click", () => onClick(c.name));
      g.addEventListener("keydown", ev => { if (ev.key === "Enter") onClick(c.name); });
      s.append(g);
    }
    return s;
  }

  // colourDAG fills each node by busy-ness (white to amber) and outlines
  // it by back pressure (red), as Flink's job graph does.
  function colourDAG(ov) {
    for (const c of ov.components) {
      const g = document.querySelector(`#dag g.node[data-component="${CSS.escape(c.name)}"]`);
      if (!g) continue;
      const busy = c.busy == null ? 0 : Math.min(1, c.busy);
      const bp = Math.min(1, c.backpressure || 0);
      const rect = g.querySelector("rect");
      const hue = bp > 0.05 ? 0 : 38; // red when back pressure dominates, else amber
      const level = Math.max(busy, bp);
      rect.style.fill = `hsl(${hue}, 85%, ${100 - 30 * level}%)`; // light enough for the labels
      rect.style.stroke = bp > 0.05 || c.backpressure_now ? "#c0392b" : "#17324d";
      rect.style.strokeWidth = bp > 0.05 || c.backpressure_now ? "3" : "1.5";
      g.dataset.busy = String(c.busy);
      g.dataset.backpressure = String(c.backpressure);
      g.dataset.backpressureNow = String(c.backpressure_now);
      g.querySelector("text.live").textContent = `busy ${pct(c.busy)} · bp ${pct(c.backpressure)}` + (c.restarts ? ` · ↻${c.restarts}` : "");
    }
  }

  // ---- charts

  const CHARTS = [
    ["emit_rate", "Emitted / s"], ["execute_rate", "Executed / s"], ["ack_rate", "Acked / s"],
    ["fail_rate", "Failed / s"], ["execute_latency_ms", "Execute latency (ms)"], ["complete_latency_ms", "Complete latency (ms)"],
    ["busy", "Busy (share of time)"], ["cpu_cores", "CPU (cores)"], ["rss_bytes", "Memory (RSS)"],
  ];

  function drawChart(canvas, timestamps, lines, isBytes) {
    const dpr = window.devicePixelRatio || 1;
    const w = canvas.clientWidth || 320, h = canvas.clientHeight || 120;
    canvas.width = w * dpr; canvas.height = h * dpr;
    const g = canvas.getContext("2d");
    g.scale(dpr, dpr);
    g.clearRect(0, 0, w, h);
    const left = 52, bottom = 16, top = 6, right = 6;
    let maxV = 0;
    for (const l of lines) for (const v of l.values) if (v != null && v > maxV) maxV = v;
    if (maxV <= 0) maxV = 1;
    const t0 = timestamps[0] || 0, t1 = timestamps[timestamps.length - 1] || 1;
    const x = t => left + (t1 > t0 ? (t - t0) / (t1 - t0) : 1) * (w - left - right);
    const y = v => top + (1 - v / maxV) * (h - top - bottom);
    g.strokeStyle = "#e8edf2"; g.fillStyle = "#7b8794"; g.font = "10px sans-serif"; g.lineWidth = 1;
    for (let i = 0; i <= 2; i++) {
      const v = maxV * i / 2;
      g.beginPath(); g.moveTo(left, y(v)); g.lineTo(w - right, y(v)); g.stroke();
      g.fillText(isBytes ? bytes(v) : maxV < 1 ? v.toPrecision(2) : fmt(v, maxV < 10 ? 2 : 0), 2, y(v) + 3);
    }
    if (timestamps.length > 1) {
      g.fillText(new Date(t0 * 1000).toLocaleTimeString(), left, h - 3);
      const last = new Date(t1 * 1000).toLocaleTimeString();
      g.fillText(last, w - right - g.measureText(last).width, h - 3);
    }
    const colors = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf"];
    lines.forEach((l, i) => {
      g.strokeStyle = colors[i % colors.length]; g.lineWidth = 1.5; g.beginPath();
      let pen = false;
      l.values.forEach((v, j) => {
        if (v == null) { pen = false; return; }
        if (pen) g.lineTo(x(timestamps[j]), y(v)); else g.moveTo(x(timestamps[j]), y(v));
        pen = true;
      });
      g.stroke();
    });
  }

  function lastKnown(values) {
    for (let i = values.length - 1; i >= 0; i--) if (values[i] != null) return values[i];
    return null;
  }

  // chartGrid makes one chart per series; render(timestamps, linesOf)
  // draws them, linesOf(series) giving [{name, values}].
  function chartGrid(grid) {
    const charts = {};
    for (const [series, title] of CHARTS) {
      const canvas = el("canvas", {});
      const legend = el("div", { class: "legend" });
      const box = el("div", { class: "chart", "data-series": series }, el("h3", { text: title }), canvas, legend);
      grid.append(box);
      charts[series] = { canvas, legend, box };
    }
    return function render(timestamps, linesOf) {
      for (const [series] of CHARTS) {
        const c = charts[series];
        const lines = linesOf(series).filter(l => l.values.some(v => v != null));
        c.box.setAttribute("data-points", String(timestamps.length));
        const isBytes = series === "rss_bytes";
        drawChart(c.canvas, timestamps, lines, isBytes);
        c.legend.replaceChildren(...(lines.length ? lines.map((l, i) => el("span", {},
          el("span", { class: "swatch sw" + (i % 8) }), l.name + " ",
          el("b", { class: "latest", "data-component": l.name, "data-series": series, "data-value": String(lastKnown(l.values)),
            text: isBytes ? bytes(lastKnown(l.values)) : series === "busy" ? pct(lastKnown(l.values)) : fmt(lastKnown(l.values), 2) })))
          : [el("span", { class: "muted", text: timestamps.length < 1 ? "waiting for samples…" : "no data" })]));
      }
    };
  }

  // ---- actions

  function token() { return sessionStorage.getItem("egret-operator-token") || ""; }

  async function act(kind, p, body) {
    const res = await fetch("/topologies/actions/" + kind + "?" + new URLSearchParams(p), {
      method: "POST", headers: { "Content-Type": "application/json", "Authorization": "Bearer " + token() }, body: JSON.stringify(body || {}),
    });
    const out = await res.json().catch(() => ({ error: res.statusText }));
    if (!res.ok) throw new Error(out.error || res.statusText);
    return out;
  }

  // confirmDialog shows what an action does; with typeName the operator
  // must type it to confirm. It resolves to true when confirmed.
  function confirmDialog(title, text, typeName) {
    return new Promise(resolve => {
      const input = typeName ? el("input", { id: "confirm-name", placeholder: typeName, autocomplete: "off" }) : null;
      const ok = el("button", { id: "confirm-ok", class: "danger", text: "Confirm" });
      const cancel = el("button", { id: "confirm-cancel", text: "Cancel" });
      const dlg = el("div", { class: "modal", id: "confirm" }, el("div", { class: "modal-box" }, el("h2", { text: title }),
        el("p", { text: text }), typeName ? el("p", {}, "Type ", el("b", { text: typeName }), " to confirm:") : null, input,
        el("div", { class: "buttons" }, cancel, ok)));
      if (input) {
        ok.disabled = true;
        input.addEventListener("input", () => { ok.disabled = input.value !== typeName; });
      }
      const close = v => { dlg.remove(); resolve(v); };
      ok.addEventListener("click", () => close(true));
      cancel.addEventListener("click", () => close(false));
      document.body.append(dlg);
      (input || ok).focus();
    });
  }

  function actionsBar(p, plan, onDone) {
    const box = el("div", { id: "actions", class: "actions" });
    const msg = el("div", { id: "action-status", class: "muted" });
    if (!consoleState.enabled) {
      box.append(el("span", { class: "muted", text: "Read-only: start the tracker with --operator-token-file to enable actions." }));
      return box;
    }
    const tok = el("input", { id: "token", type: "password", placeholder: "operator token", value: token(), size: "18" });
    tok.addEventListener("change", () => sessionStorage.setItem("egret-operator-token", tok.value));
    async function run(kind, title, text, body, typeName) {
      sessionStorage.setItem("egret-operator-token", tok.value);
      if (!await confirmDialog(title, text, typeName)) return;
      try {
        const a = await act(kind, p, body);
        msg.textContent = `action ${a.id} (${a.action}) started…`;
        msg.className = "";
        follow(a.id);
      } catch (e) {
        msg.textContent = e.message;
        msg.className = "error";
      }
    }
    async function follow(id) {
      try {
        const { actions } = await api("/actions");
        const a = actions.find(x => x.id === id);
        if (a) {
          msg.textContent = `action ${a.id} (${a.action}): ${a.state}${a.message ? " — " + a.message : ""}${a.progress.length ? " · " + a.progress[a.progress.length - 1] : ""}`;
          msg.className = a.state === "failed" ? "error" : a.state === "succeeded" ? "ok" : "";
          msg.dataset.state = a.state;
          msg.dataset.id = String(a.id);
          if (a.state === "running") { setTimeout(() => follow(id), 1000); return; }
          onDone(a);
        }
      } catch (e) { msg.textContent = e.message; }
    }
    const comps = plan.components.map(c => c.name);
    const compSel = el("select", { id: "rescale-component" }, ...comps.map(c => el("option", { value: c, text: c })));
    const par = el("input", { id: "rescale-parallelism", type: "number", min: "1", value: "1", style: "width:4em" });
    const lvl = el("select", { id: "loglevel-level" }, ...["debug", "info", "warn", "error"].map(l => el("option", { value: l, text: l })));
    const lvlComp = el("select", { id: "loglevel-component" }, el("option", { value: "", text: "every process" }),
      ...comps.map(c => el("option", { value: c, text: c })), ...["tmanager", "stmgr", "metricsmgr", "shell"].map(c => el("option", { value: c, text: c })));
    const lvlDur = el("input", { id: "loglevel-duration", value: "10m", size: "4" });
    const name = p.topology;
    box.append(tok,
      el("button", { id: "act-activate", text: "Activate", onclick: () => run("activate", "Activate " + name, "The spouts start emitting again.") }),
      el("button", { id: "act-deactivate", text: "Deactivate", onclick: () => run("deactivate", "Deactivate " + name, "The spouts stop; the tracker waits until nothing is in flight (the cluster's deactivate drain timeout).") }),
      el("span", { class: "group" }, "Rescale ", compSel, " to ", par, " tasks ",
        el("button", { id: "act-rescale", text: "Rescale", onclick: () => run("rescale", `Rescale ${compSel.value} of ${name}`,
          `${compSel.value} runs ${plan.components.find(c => c.name === compSel.value).parallelism} task(s) now; it will run ${par.value}. Instances that stop or move are drained first; a failure rolls everything back.`,
          { component: compSel.value, parallelism: parseInt(par.value) }) })),
      el("span", { class: "group" }, "Log level ", lvl, " for ", lvlComp, " during ", lvlDur, " ",
        el("button", { id: "act-loglevel", text: "Set", onclick: () => run("loglevel", "Change the log level of " + name,
          `${lvlComp.value || "every process"} logs at ${lvl.value} for ${lvlDur.value}, then returns to its configured level.`,
          { level: lvl.value, component: lvlComp.value, duration: lvlDur.value }) })),
      consoleState.savepoints ? el("button", { id: "act-savepoint", text: "Savepoint", hidden: true, onclick: () => run("savepoint", "Savepoint of " + name,
        "The topology manager takes a checkpoint now; once every task stored its state, it is copied to a new savepoint in the cluster's savepoint directory (egret.savepoint.directory). The topology keeps running.") }) : null,
      el("button", { id: "act-kill", class: "danger", text: "Kill", onclick: () => run("kill", "Kill " + name,
        "The spouts are deactivated and the topology drained (the cluster's kill drain timeout), then every container stops and its state, package and checkpoints are removed. This cannot be undone.",
        { confirm: name }, name) }),
      msg);
    return box;
  }

  // ---- topology view

  async function topologyView(gen, cluster, name) {
    const main = document.getElementById("main");
    const p = { cluster, topology: name };
    const head = el("section", { class: "card" },
      el("div", { class: "title-row" }, el("h1", { id: "title", text: name }), el("span", { id: "health" })),
      el("div", { class: "muted", id: "subtitle", text: "cluster " + cluster }),
      el("ul", { id: "health-reasons", class: "reasons" }),
      el("div", { class: "facts", id: "facts" }),
      el("div", { class: "links", id: "links" },
        el("a", { href: topoHash("exceptions", cluster, name), id: "exceptions-link", text: "exceptions" }),
        el("a", { href: topoHash("logs", cluster, name, "0", "tmanager.log"), id: "logs-link", text: "logs" })),
      el("div", { id: "actions-box" }));
    const dagCard = el("section", { class: "card" }, el("h2", { text: "Logical plan" }),
      el("div", { class: "muted legend-line", text: "fill: busy-ness (share of time executing) · red: back pressure (a bolt causing it, a spout throttled by it) · click a component for its tasks" }),
      el("div", { id: "dag-box" }));
    const compCard = card("Components", "components");
    const chartCard = el("section", { class: "card" }, el("h2", { text: "Metrics (live)" }), el("div", { class: "grid", id: "charts" }));
    const contCard = card("Containers: CPU and memory", "containers");
    const ckptCard = card("Checkpoints", "checkpoints");
    const ppCard = card("Physical plan", "pplan");
    const excCard = card("Exceptions", "exceptions");
    main.replaceChildren(el("p", {}, el("a", { href: "#/", text: "← all topologies" })), head, dagCard, compCard, chartCard, contCard, ckptCard, ppCard, excCard);

    let plan = null;
    try {
      plan = await api("/topologies/logicalplan", p);
      document.getElementById("dag-box").replaceChildren(drawDAG(plan, c => { location.hash = topoHash("component", cluster, name, c); }));
      const es = await api("/topologies/executionstate", p);
      document.getElementById("subtitle").textContent =
        `cluster ${cluster} · role ${es.role || "–"} · environ ${es.environ || "–"} · submitted ${when(es.submitted_unix)} by ${es.user || "–"} · id ${es.id}`;
      const links = document.getElementById("links");
      const jl = (es.scheduler_location && es.scheduler_location.job_links) || [];
      for (const l of jl) {
        if (/^https?:\/\//.test(l)) links.append(el("a", { href: l, target: "_blank", rel: "noopener", class: "job-link", text: "job page: " + l }));
        else links.append(el("span", { class: "muted job-link", text: l }));
      }
      if (jl.length === 0) links.append(el("span", { class: "muted", text: "the scheduler gives no job page" }));
      document.getElementById("actions-box").replaceChildren(actionsBar(p, plan, a => {
        if (a.action === "kill" && a.state === "succeeded") location.hash = "#/";
      }));
    } catch (e) {
      setStatus(e.message, true);
      document.getElementById("dag-box").replaceChildren(el("p", { class: "error", text: e.message }));
    }

    const render = chartGrid(document.getElementById("charts"));

    async function refresh() {
      if (gen !== generation) return;
      const errors = [];
      const soft = (id) => e => {
        errors.push(e.message);
        document.getElementById(id).replaceChildren(el("p", { class: "muted", text: e.message }));
      };
      await Promise.all([
        api("/topologies/overview", p).then(renderOverview).catch(soft("facts")),
        api("/topologies/metrics/timeline", p).then(tl => render(tl.timestamps,
          series => Object.keys(tl.components).sort().map(c => ({ name: c, values: tl.components[c][series] || [] })))).catch(e => errors.push(e.message)),
        api("/topologies/physicalplan", p).then(renderPhysical).catch(soft("pplan")),
        api("/topologies/exceptionsummary", p).then(renderExceptions).catch(soft("exceptions")),
        api("/topologies/checkpoints", p).then(renderCheckpoints).catch(soft("checkpoints")),
      ]);
      if (gen !== generation) return;
      setStatus(errors.length ? errors[0] : "updated " + new Date().toLocaleTimeString(), errors.length > 0);
      schedule(gen, refresh);
    }

    function renderOverview(ov) {
      const spb = document.getElementById("act-savepoint"); // only an effectively-once topology has savepoints
      if (spb) spb.hidden = ov.delivery_mode !== "effectively-once";
      document.getElementById("health").replaceChildren(healthBadge(ov.health));
      document.getElementById("health-reasons").replaceChildren(...ov.health.reasons.map(r => el("li", { text: r })));
      const ck = ov.checkpoints;
      const facts = [
        ["state", stateBadge(ov.state)], ["uptime", duration(ov.uptime_seconds)], ["delivery", ov.delivery_mode],
        ["restarts", String(ov.restarts)],
        ["back pressure now", ov.backpressure.active ? `yes: containers ${ov.backpressure.containers.join(", ")}` + (ov.backpressure.culprits.length ? `, caused by ${ov.backpressure.culprits.join(", ")}` : "") : "no"],
        ["last checkpoint", ck ? (ck.last_id ? `#${ck.last_id}, ${duration(ck.age_seconds)} ago, ${fmt(ck.duration_ms, 0)} ms (alignment ${fmt(ck.alignment_ms, 1)} ms), ${bytes(ck.size_bytes)}` : "none yet") : "– (not effectively-once)"],
        ["exceptions", `${ov.exceptions.total} (${ov.exceptions.recent} in 10 min)`],
      ];
      document.getElementById("facts").replaceChildren(...facts.map(([k, v]) => el("div", { class: "fact", "data-fact": k }, el("span", { class: "muted", text: k }), el("b", {}, v))));
      if (document.getElementById("dag")) colourDAG(ov);
      const [t, tb] = table("component-table", ["Component", "Kind", "Tasks", "Reporting", "Emitted/s", "Executed/s", "Acked/s", "Failed/s", "Exec ms", "Complete ms", "Busy", "Back pressure", "In queue", "CPU", "Memory", "Restarts", "Exceptions"],
        i => i >= 2);
      for (const c of ov.components) {
        tb.append(el("tr", { class: "component" + (c.backpressure_now ? " bp" : ""), "data-component": c.name, "data-restarts": String(c.restarts) },
          el("td", {}, el("a", { href: topoHash("component", cluster, name, c.name), text: c.name })), el("td", { text: c.kind }),
          el("td", { class: "num", text: String(c.parallelism) }), el("td", { class: "num", text: String(c.reporting) }),
          el("td", { class: "num", text: fmt(c.emit_rate) }), el("td", { class: "num", text: fmt(c.execute_rate) }),
          el("td", { class: "num", text: fmt(c.ack_rate) }), el("td", { class: "num", text: fmt(c.fail_rate) }),
          el("td", { class: "num", text: fmt(c.execute_latency_ms, 3) }), el("td", { class: "num", text: fmt(c.complete_latency_ms, 2) }),
          el("td", { class: "num busy", text: pct(c.busy) }), el("td", { class: "num backpressure", text: pct(c.backpressure) + (c.backpressure_now ? " now" : "") }),
          el("td", { class: "num", text: bytes(c.in_queue_bytes) }), el("td", { class: "num", text: fmt(c.cpu_cores, 2) }),
          el("td", { class: "num", text: bytes(c.rss_bytes) }),
          el("td", { class: "num restarts" + (c.recent_restarts >= 3 ? " bad" : c.restarts ? " warn" : ""), text: String(c.restarts) }),
          el("td", { class: "num", text: String(c.exceptions) })));
      }
      document.getElementById("components").replaceChildren(t);
      const [ct, ctb] = table("container-table", ["Container", "Instances", "CPU (cores)", "Memory (RSS)", "Memory limit", "OOM kills", "CPU throttled", "Back pressure", "Processes"],
        i => i >= 1 && i <= 7);
      for (const c of ov.containers) {
        ctb.append(el("tr", { class: "container", "data-container": String(c.id), "data-cpu": String(c.cpu_cores), "data-rss": String(c.rss_bytes) },
          el("td", {}, el("a", { href: topoHash("logs", cluster, name, String(c.id), c.id === 0 ? "tmanager.log" : "stmgr.log"), text: "container " + c.id })),
          el("td", { class: "num", text: String(c.instances) }),
          el("td", { class: "num", text: fmt(c.cpu_cores, 2) }), el("td", { class: "num", text: bytes(c.rss_bytes) }),
          el("td", { class: "num", text: c.memory_limit_bytes ? bytes(c.memory_limit_bytes) : "–" }),
          el("td", { class: "num" + (c.oom_kills ? " bad" : ""), text: String(c.oom_kills) }),
          el("td", { class: "num", text: c.throttled_cores == null ? "–" : fmt(c.throttled_cores, 2) + " cores" }),
          el("td", { class: "num", text: pct(c.backpressure) + (c.backpressure_now ? " now" : "") }),
          el("td", { class: "muted", text: c.processes.map(x => `${x.name} ${fmt(x.cpu_cores, 2)}c ${bytes(x.rss_bytes)}`).join(" · ") })));
      }
      document.getElementById("containers").replaceChildren(ov.containers.length ? ct : el("p", { class: "muted", text: "waiting for samples…" }));
    }

    function renderCheckpoints(ck) {
      const box = document.getElementById("checkpoints");
      if (!ck.enabled) {
        box.replaceChildren(el("p", { class: "muted", text: "This topology does not checkpoint (its delivery mode is not effectively-once)." }));
        return;
      }
      const c = ck.counters;
      const parts = [el("p", { id: "checkpoint-counters", text: `every ${ck.interval_seconds}s · started ${c.started ?? "–"} · completed ${c.completed ?? "–"} · aborted ${c.aborted ?? "–"} · failed ${c.failed ?? "–"} · restores ${c.restores ?? "–"} · epoch ${c.epoch ?? "–"}` })];
      const hist = ck.history.slice(-20).reverse();
      const [t, tb] = table("checkpoint-history", ["Checkpoint", "Completed", "Duration (ms)", "Alignment (ms)", "Size"], i => i >= 2);
      for (const h of hist) tb.append(el("tr", { class: "checkpoint", "data-id": String(h.id), "data-alignment": String(h.alignment_ms) }, el("td", { text: "#" + h.id }), el("td", { text: when(h.completed_unix) }),
        el("td", { class: "num", text: fmt(h.duration_ms, 0) }), el("td", { class: "num alignment", text: fmt(h.alignment_ms, 1) }), el("td", { class: "num", text: bytes(h.size_bytes) })));
      parts.push(hist.length ? t : el("p", { class: "muted", text: "No checkpoint completed while the tracker watched." }));
      if (ck.events.length) parts.push(el("p", { class: "error", text: "Recent: " + ck.events.slice(-5).map(e => `${e.count} ${e.kind} at ${when(e.unix)}`).join(" · ") }));
      if (ck.tasks.length) {
        const names = [...new Set(ck.tasks.flatMap(x => Object.keys(x.metrics)))].sort();
        const [tt, ttb] = table("checkpoint-tasks", ["Task", "Component", ...names], i => i >= 2);
        for (const x of ck.tasks) ttb.append(el("tr", {}, el("td", { text: String(x.task) }), el("td", { text: x.component }),
          ...names.map(n => el("td", { class: "num", text: x.metrics[n] == null ? "–" : /bytes/.test(n) ? bytes(x.metrics[n]) : fmt(x.metrics[n], 0) }))));
        parts.push(el("h3", { text: "Per task" }), tt);
      }
      box.replaceChildren(...parts);
    }

    function renderPhysical(pp) {
      const box = document.getElementById("pplan");
      const info = el("p", { class: "muted" });
      info.textContent = `plan version ${pp.version} · ${pp.state}` +
        (pp.tmanager ? ` · topology manager ${pp.tmanager.host}:${pp.tmanager.http_port} (pid ${pp.tmanager.pid})` : " · no topology manager");
      const parts = [info];
      for (const c of pp.containers) {
        const t = el("table", {}, el("thead", {}, el("tr", {},
          ...["Task", "Component", "Index", "CPU", "RAM MiB", "Pid", "Started", "Restarts", "Log"].map((h, i) => el("th", { class: i === 0 || i >= 2 && i !== 6 && i !== 8 ? "num" : "", text: h })))));
        const tb = el("tbody");
        for (const i of c.instances) {
          const file = `instance-${i.component}-${i.task}.log`;
          tb.append(el("tr", { class: "instance" + (i.restarts > 0 ? " restarted" : ""), id: "inst-" + i.task, "data-task": String(i.task),
            "data-component": i.component, "data-pid": String(i.pid), "data-restarts": String(i.restarts) },
          el("td", { class: "num", text: String(i.task) }), el("td", { text: i.component }), el("td", { class: "num", text: String(i.index) }),
          el("td", { class: "num", text: fmt(i.resources.cpu, 2) }), el("td", { class: "num", text: fmt(i.resources.ram_bytes / 1048576, 0) }),
          el("td", { class: "num pid", text: i.pid ? String(i.pid) : "–" }), el("td", { text: when(i.started_unix) }),
          el("td", { class: "num restarts", text: String(i.restarts) }),
          el("td", {}, el("a", { class: "log-view", href: topoHash("logs", cluster, name, String(c.id), file), text: "log" }), " ",
            el("a", { class: "log-link", target: "_blank", rel: "noopener", text: "raw",
              href: "/topologies/containerfiledata?" + new URLSearchParams({ ...p, container: String(c.id), path: file, offset: "-65536", length: "65536" }) }))));
        }
        t.append(tb);
        const where = c.registered ? `${c.host} · data port ${c.data_port} · metrics port ${c.metrics_port}` : "stream manager not registered";
        parts.push(el("div", { class: "container-box", "data-container": String(c.id) }, el("h3", { text: `Container ${c.id}` }),
          el("div", { class: "muted", text: where }), t));
      }
      box.replaceChildren(...parts);
    }

    function renderExceptions(ex) {
      const box = document.getElementById("exceptions");
      if (ex.summary.length === 0) {
        box.replaceChildren(el("p", { class: "muted", text: "No exceptions." }));
        return;
      }
      const parts = [exceptionTable(ex.summary.slice(0, 10))];
      if (ex.summary.length > 10) parts.push(el("p", {}, el("a", { href: topoHash("exceptions", cluster, name), text: `all ${ex.summary.length} groups…` })));
      box.replaceChildren(...parts);
    }

    refresh();
  }

  function exceptionTable(summary) {
    const [t, tb] = table("exception-table", ["Component", "Message", "Count", "Tasks", "First seen", "Last seen"], i => i === 2);
    for (const s of summary) {
      const msg = el("td", {}, el("div", { class: "message", text: s.message }));
      if (s.last_stack) msg.append(el("details", {}, el("summary", { text: "full text" }), el("pre", { class: "stack", text: s.last_stack })));
      tb.append(el("tr", { class: "exception", "data-component": s.component, "data-count": String(s.count) },
        el("td", { text: s.component }), msg, el("td", { class: "num count", text: String(s.count) }),
        el("td", { text: s.tasks.join(", ") }), el("td", { text: when(s.first_unix_nanos / 1e9) }), el("td", { text: when(s.last_unix_nanos / 1e9) })));
    }
    return t;
  }

  // ---- component view

  async function componentView(gen, cluster, name, comp) {
    const main = document.getElementById("main");
    const p = { cluster, topology: name, component: comp };
    main.replaceChildren(el("p", {}, el("a", { href: topoHash("topology", cluster, name), text: "← " + name })),
      el("section", { class: "card" }, el("h1", { id: "title", text: comp }), el("div", { class: "muted", id: "subtitle", text: `component of ${name} · cluster ${cluster}` })),
      card("Tasks", "tasks"),
      el("section", { class: "card" }, el("h2", { text: "Per task (live)" }), el("div", { class: "grid", id: "charts" })),
      card("Exceptions", "exceptions"));
    const render = chartGrid(document.getElementById("charts"));
    async function refresh() {
      if (gen !== generation) return;
      try {
        const c = await api("/topologies/component", p);
        document.getElementById("subtitle").textContent = `${c.kind} × ${c.parallelism} of ${name} · cluster ${cluster}`;
        const [t, tb] = table("task-table", ["Task", "Container", "Pid", "Restarts", "Emitted", "Executed", "Acked", "Failed", "Emit/s", "Exec/s", "Busy",
          "Exec ms p50/p99", "Complete ms p50/p99", "Queue: stmgr/in/out", "Pending", "CPU", "Memory", "OOM", "Exceptions", "Log"], i => i !== 19);
        const pc = x => x ? `${fmt(x.p50, 3)} / ${fmt(x.p99, 3)}` : "–";
        for (const r of c.tasks) {
          tb.append(el("tr", { class: "task" + (r.reporting ? "" : " stale") + (r.restarts ? " restarted" : ""), "data-task": String(r.task),
            "data-executed": String(r.executed), "data-emitted": String(r.emitted), "data-cpu": String(r.cpu_cores), "data-rss": String(r.rss_bytes),
            "data-p99": String(r.execute_latency_percentiles_ms ? r.execute_latency_percentiles_ms.p99 : "") },
          el("td", { class: "num", text: String(r.task) }), el("td", { class: "num", text: String(r.container) }),
          el("td", { class: "num", text: r.pid ? String(r.pid) : "–" }), el("td", { class: "num", text: String(r.restarts) }),
          el("td", { class: "num", text: fmt(r.emitted, 0) }), el("td", { class: "num", text: fmt(r.executed, 0) }),
          el("td", { class: "num", text: fmt(r.acked, 0) }), el("td", { class: "num", text: fmt(r.failed, 0) }),
          el("td", { class: "num", text: fmt(r.emit_rate) }), el("td", { class: "num", text: fmt(r.execute_rate) }),
          el("td", { class: "num", text: pct(r.busy) }),
          el("td", { class: "num", text: pc(r.execute_latency_percentiles_ms) }), el("td", { class: "num", text: pc(r.complete_latency_percentiles_ms) }),
          el("td", { class: "num", text: `${bytes(r.stmgr_queue_bytes)} / ${bytes(r.in_queue_bytes)} / ${bytes(r.out_queue_bytes)}` }),
          el("td", { class: "num", text: fmt(r.pending_roots, 0) }), el("td", { class: "num", text: fmt(r.cpu_cores, 2) }),
          el("td", { class: "num", text: bytes(r.rss_bytes) }), el("td", { class: "num" + (r.oom_kills ? " bad" : ""), text: String(r.oom_kills) }),
          el("td", { class: "num", text: String(r.exceptions) }),
          el("td", {}, el("a", { href: topoHash("logs", cluster, name, String(r.container), `instance-${comp}-${r.task}.log`), text: "log" }))));
        }
        document.getElementById("tasks").replaceChildren(t);
        const tasks = c.tasks.slice(0, 8);
        const tls = await Promise.all(tasks.map(r => api("/topologies/metrics/timeline", { cluster, topology: name, component: comp, instance: String(r.task) })));
        if (tls.length) render(tls[0].timestamps, series => tls.map((tl, i) => ({ name: "task " + tasks[i].task, values: tl.instance.series[series] || [] })));
        const ex = await api("/topologies/exceptionsummary", p);
        document.getElementById("exceptions").replaceChildren(ex.summary.length ? exceptionTable(ex.summary) : el("p", { class: "muted", text: "No exceptions." }));
        setStatus("updated " + new Date().toLocaleTimeString());
      } catch (e) {
        setStatus(e.message, true);
      }
      schedule(gen, refresh, 3000);
    }
    refresh();
  }

  // ---- exceptions view

  async function exceptionsView(gen, cluster, name) {
    const main = document.getElementById("main");
    const p = { cluster, topology: name };
    const filter = el("input", { id: "exception-filter", placeholder: "filter by component or message", size: "40" });
    main.replaceChildren(el("p", {}, el("a", { href: topoHash("topology", cluster, name), text: "← " + name })),
      el("section", { class: "card exceptions-page" }, el("h1", { text: "Exceptions of " + name }),
        el("p", { class: "muted", text: "Grouped by component and message; expand a row for its full text (a subprocess's traceback included)." }), filter,
        el("div", { id: "exceptions" })));
    let last = [];
    const draw = () => {
      const f = filter.value.toLowerCase();
      const rows = last.filter(s => !f || (s.component + " " + s.message).toLowerCase().includes(f));
      document.getElementById("exceptions").replaceChildren(rows.length ? exceptionTable(rows) : el("p", { class: "muted", text: "No exceptions." }));
    };
    filter.addEventListener("input", draw);
    async function refresh() {
      if (gen !== generation) return;
      try {
        const open = [...document.querySelectorAll("#exceptions details[open]")].length;
        const ex = await api("/topologies/exceptionsummary", p);
        last = ex.summary;
        if (!open) draw(); // do not close what the operator reads
        setStatus("updated " + new Date().toLocaleTimeString());
      } catch (e) {
        setStatus(e.message, true);
      }
      schedule(gen, refresh, 5000);
    }
    refresh();
  }

  // ---- logs view

  const LOG_CHUNK = 131072;

  async function logsView(gen, cluster, name, container, file) {
    const main = document.getElementById("main");
    const p = { cluster, topology: name };
    const files = el("select", { id: "log-file" });
    const containers = el("select", { id: "log-container" });
    const grep = el("input", { id: "log-grep", placeholder: "search", size: "24" });
    const followBox = el("input", { id: "log-follow", type: "checkbox" });
    const older = el("button", { id: "log-older", text: "← older" });
    const newer = el("button", { id: "log-newer", text: "newest" });
    const info = el("span", { id: "log-info", class: "muted" });
    const pre = el("pre", { id: "log-text", class: "log" });
    main.replaceChildren(el("p", {}, el("a", { href: topoHash("topology", cluster, name), text: "← " + name })),
      el("section", { class: "card" }, el("h1", { text: "Logs of " + name }),
        el("div", { class: "toolbar" }, "container ", containers, " file ", files, " ", grep, " ", older, newer,
          el("label", {}, followBox, " follow"), " ", info), pre));
    let range = null; // {offset, end, size} of what is shown
    async function loadFiles() {
      try {
        const pp = await api("/topologies/packingplan", p);
        containers.replaceChildren(...[0, ...pp.containers.map(c => c.id)].map(c => el("option", { value: String(c), text: String(c) })));
        containers.value = container;
        const st = await api("/topologies/containerfilestats", { ...p, container });
        files.replaceChildren(...st.files.map(f => el("option", { value: f.name, text: `${f.name} (${bytes(f.size)})` })));
        if (st.files.some(f => f.name === file)) files.value = file;
        else if (st.files.length) { file = st.files[0].name; files.value = file; }
      } catch (e) { setStatus(e.message, true); }
    }
    function show(d, append) {
      const text = d.lines.map(l => l.text).join("\n");
      if (append && pre.textContent) pre.textContent += (text ? "\n" + text : "");
      else pre.textContent = text;
      pre.dataset.lines = String((append ? parseInt(pre.dataset.lines || "0") : 0) + d.lines.length);
      info.textContent = `bytes ${range.offset}–${range.end} of ${d.size}` + (d.grep ? ` · lines matching “${d.grep}”` : "");
      older.disabled = range.offset <= 0;
    }
    async function load(offset) {
      try {
        const d = await api("/topologies/logs", { ...p, container, path: file, offset: String(offset), length: String(LOG_CHUNK), grep: grep.value });
        range = { offset: d.offset, end: d.end, size: d.size };
        show(d, false);
        if (offset < 0) pre.scrollTop = pre.scrollHeight;
        setStatus("updated " + new Date().toLocaleTimeString());
      } catch (e) {
        pre.textContent = e.message;
        setStatus(e.message, true);
      }
    }
    async function follow() {
      if (gen !== generation || !followBox.checked) return;
      try {
        const d = await api("/topologies/logs", { ...p, container, path: file, offset: String(range ? range.end : -LOG_CHUNK), length: String(LOG_CHUNK), grep: grep.value });
        if (!range) range = { offset: d.offset, end: d.end, size: d.size };
        else range.end = d.end;
        if (d.lines.length) { show(d, true); pre.scrollTop = pre.scrollHeight; }
      } catch (e) { setStatus(e.message, true); }
      schedule(gen, follow, 1000);
    }
    older.addEventListener("click", () => load(Math.max(0, range.offset - LOG_CHUNK)));
    newer.addEventListener("click", () => load(-LOG_CHUNK));
    grep.addEventListener("change", () => load(-LOG_CHUNK));
    followBox.addEventListener("change", () => { if (followBox.checked) follow(); });
    containers.addEventListener("change", () => { location.hash = topoHash("logs", cluster, name, containers.value, containers.value === "0" ? "tmanager.log" : "stmgr.log"); });
    files.addEventListener("change", () => { location.hash = topoHash("logs", cluster, name, container, files.value); });
    await loadFiles();
    await load(-LOG_CHUNK);
  }

  async function route() {
    generation++;
    clearTimeout(timer);
    const gen = generation;
    document.querySelectorAll(".modal").forEach(m => m.remove());
    try { consoleState = await api("/actions"); } catch (e) { consoleState = { enabled: false }; }
    const mode = document.getElementById("mode");
    if (mode) mode.textContent = consoleState.enabled ? "actions enabled (operator token)" : "read-only";
    const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
    if (parts[0] === "topology" && parts.length === 3) topologyView(gen, parts[1], parts[2]);
    else if (parts[0] === "component" && parts.length === 4) componentView(gen, parts[1], parts[2], parts[3]);
    else if (parts[0] === "exceptions" && parts.length === 3) exceptionsView(gen, parts[1], parts[2]);
    else if (parts[0] === "logs" && parts.length === 5) logsView(gen, parts[1], parts[2], parts[3], parts[4]);
    else listView(gen);
  }

  window.addEventListener("hashchange", route);
  route();
})();
