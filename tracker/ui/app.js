// Egret tracker UI: plain JavaScript, no build step, no external assets.
// Views (by location hash):
//   #/                                 topologies of every cluster
//   #/topology/<cluster>/<topology>    logical plan DAG, physical plan,
//                                      live charts, exceptions, job links
"use strict";

(function () {
  const POLL_MS = 2000;
  const SVG = "http://www.w3.org/2000/svg";
  let timer = null;
  let generation = 0; // views started; a stale poll stops itself

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v;
      else if (k === "text") e.textContent = v;
      else e.setAttribute(k, v);
    }
    for (const c of children) if (c != null) e.append(c);
    return e;
  }

  function svg(tag, attrs) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
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

  // ---- topology list

  async function listView(gen) {
    const main = document.getElementById("main");
    const card = el("section", { class: "card" }, el("h2", { text: "Topologies" }));
    const table = el("table", { id: "topologies" });
    table.append(el("thead", {}, el("tr", {},
      ...["Cluster", "Topology", "Role", "Environ", "State", "Containers", "Instances", "Throughput (tuples/s)", "Submitted"].map(
        (h, i) => el("th", { class: i >= 5 && i <= 7 ? "num" : "", text: h })))));
    const tbody = el("tbody");
    table.append(tbody);
    card.append(table);
    main.replaceChildren(card);
    async function refresh() {
      if (gen !== generation) return;
      try {
        const { topologies, problems } = await api("/topologies");
        tbody.replaceChildren();
        for (const p of problems || []) {
          tbody.append(el("tr", { class: "cluster-problem" }, el("td", { text: p.cluster }),
            el("td", { colspan: "8", class: "error", text: p.error })));
        }
        if (topologies.length === 0) {
          tbody.append(el("tr", {}, el("td", { colspan: "9", class: "muted", text: "No topologies." })));
        }
        for (const t of topologies) {
          const link = el("a", { href: "#/topology/" + encodeURIComponent(t.cluster) + "/" + encodeURIComponent(t.name), text: t.name });
          const tr = el("tr", { "data-topology": t.name, "data-cluster": t.cluster },
            el("td", { text: t.cluster }), el("td", {}, link), el("td", { text: t.role || "–" }), el("td", { text: t.environ || "–" }),
            el("td", {}, stateBadge(t.state), t.problem ? el("div", { class: "muted", text: t.problem }) : null),
            el("td", { class: "num", text: String(t.containers) }), el("td", { class: "num", text: String(t.instances) }),
            el("td", { class: "num throughput", text: fmt(t.throughput) }), el("td", { text: when(t.submitted_unix) }));
          tbody.append(tr);
        }
        setStatus("updated " + new Date().toLocaleTimeString());
      } catch (e) {
        setStatus(e.message, true);
      }
      schedule(gen, refresh);
    }
    refresh();
  }

  function schedule(gen, fn) {
    if (gen !== generation) return;
    clearTimeout(timer);
    timer = setTimeout(fn, POLL_MS);
  }

  // ---- logical plan DAG

  // layout assigns each component a layer (longest path from a spout) and
  // a row within the layer.
  function layout(plan) {
    const layer = {};
    const byName = {};
    for (const c of plan.components) { byName[c.name] = c; layer[c.name] = 0; }
    // Longest-path layering; at most n rounds (the plan is a DAG).
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
    const W = 150, H = 46, GX = 90, GY = 36;
    let rows = 0;
    layers.forEach((names, i) => {
      names.sort();
      rows = Math.max(rows, names.length);
      names.forEach((n, j) => { pos[n] = { x: 20 + i * (W + GX), y: 20 + j * (H + GY), w: W, h: H }; });
    });
    return { pos, width: 40 + layers.length * (W + GX) - GX, height: 40 + rows * (H + GY) - GY };
  }

  function drawDAG(plan) {
    const { pos, width, height } = layout(plan);
    const s = svg("svg", { class: "dag", id: "dag", viewBox: `0 0 ${width} ${height}`, height: String(height) });
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
      const g = svg("g", { class: "node " + c.kind, "data-component": c.name, transform: `translate(${p.x},${p.y})` });
      g.append(svg("rect", { width: String(p.w), height: String(p.h), rx: "6" }));
      const t = svg("text", { x: "10", y: "19" });
      t.textContent = c.name;
      const sub = svg("text", { x: "10", y: "36", class: "sub" });
      sub.textContent = `${c.kind} × ${c.parallelism}`;
      const title = svg("title");
      title.textContent = `${c.name}: ${c.kind}, ${c.parallelism} task(s); outputs ${c.outputs.map(o => o.id + "(" + o.fields.join(",") + ")").join(" ") || "none"}`;
      g.append(t, sub, title);
      s.append(g);
    }
    return s;
  }

  // ---- charts

  const CHARTS = [
    ["emit_rate", "Emitted / s"], ["execute_rate", "Executed / s"], ["ack_rate", "Acked / s"],
    ["fail_rate", "Failed / s"], ["execute_latency_ms", "Execute latency (ms)"], ["complete_latency_ms", "Complete latency (ms)"],
  ];

  function drawChart(canvas, timestamps, lines) {
    const dpr = window.devicePixelRatio || 1;
    const w = canvas.clientWidth || 320, h = canvas.clientHeight || 120;
    canvas.width = w * dpr; canvas.height = h * dpr;
    const g = canvas.getContext("2d");
    g.scale(dpr, dpr);
    g.clearRect(0, 0, w, h);
    const left = 44, bottom = 16, top = 6, right = 6;
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
      g.fillText(maxV < 1 ? v.toPrecision(2) : fmt(v, maxV < 10 ? 2 : 0), 2, y(v) + 3);
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

  // ---- topology view

  async function topologyView(gen, cluster, name) {
    const main = document.getElementById("main");
    const p = { cluster, topology: name };
    const head = el("section", { class: "card" }, el("h1", { id: "title", text: name }),
      el("div", { class: "muted", id: "subtitle", text: "cluster " + cluster }), el("div", { class: "links", id: "links" }));
    const dagCard = el("section", { class: "card" }, el("h2", { text: "Logical plan" }), el("div", { id: "dag-box" }));
    const chartCard = el("section", { class: "card" }, el("h2", { text: "Metrics (live)" }), el("div", { class: "grid", id: "charts" }));
    const ppCard = el("section", { class: "card" }, el("h2", { text: "Physical plan" }), el("div", { id: "pplan" }));
    const excCard = el("section", { class: "card" }, el("h2", { text: "Exceptions" }), el("div", { id: "exceptions" }));
    main.replaceChildren(el("p", {}, el("a", { href: "#/", text: "← all topologies" })), head, dagCard, chartCard, ppCard, excCard);

    try {
      const plan = await api("/topologies/logicalplan", p);
      document.getElementById("dag-box").replaceChildren(drawDAG(plan));
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
    } catch (e) {
      setStatus(e.message, true);
      document.getElementById("dag-box").replaceChildren(el("p", { class: "error", text: e.message }));
    }

    const charts = {};
    const grid = document.getElementById("charts");
    for (const [series, title] of CHARTS) {
      const canvas = el("canvas", {});
      const legend = el("div", { class: "legend" });
      const box = el("div", { class: "chart", "data-series": series }, el("h3", { text: title }), canvas, legend);
      grid.append(box);
      charts[series] = { canvas, legend, box };
    }

    async function refresh() {
      if (gen !== generation) return;
      const errors = [];
      await Promise.all([
        api("/topologies/metrics/timeline", p).then(renderTimeline).catch(e => errors.push(e.message)),
        api("/topologies/physicalplan", p).then(renderPhysical).catch(e => {
          errors.push(e.message);
          document.getElementById("pplan").replaceChildren(el("p", { class: "muted", text: e.message }));
        }),
        api("/topologies/exceptionsummary", p).then(renderExceptions).catch(e => {
          errors.push(e.message);
          document.getElementById("exceptions").replaceChildren(el("p", { class: "muted", text: e.message }));
        }),
      ]);
      if (gen !== generation) return;
      setStatus(errors.length ? errors[0] : "updated " + new Date().toLocaleTimeString(), errors.length > 0);
      schedule(gen, refresh);
    }

    function renderTimeline(tl) {
      const comps = Object.keys(tl.components).sort();
      for (const [series] of CHARTS) {
        const c = charts[series];
        const lines = comps.map(name => ({ name, values: tl.components[name][series] || [] }))
          .filter(l => l.values.some(v => v != null));
        c.box.setAttribute("data-points", String(tl.timestamps.length));
        drawChart(c.canvas, tl.timestamps, lines);
        c.legend.replaceChildren(...(lines.length ? lines.map((l, i) => el("span", {},
          el("span", { class: "swatch sw" + (i % 8) }), l.name + " ",
          el("b", { class: "latest", "data-component": l.name, "data-series": series, "data-value": String(lastKnown(l.values)), text: fmt(lastKnown(l.values), 2) })))
          : [el("span", { class: "muted", text: tl.timestamps.length < 1 ? "waiting for samples…" : "no data" })]));
      }
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
          tb.append(el("tr", { class: "instance" + (i.restarts > 0 ? " restarted" : ""), id: "inst-" + i.task, "data-task": String(i.task),
            "data-component": i.component, "data-pid": String(i.pid), "data-restarts": String(i.restarts) },
          el("td", { class: "num", text: String(i.task) }), el("td", { text: i.component }), el("td", { class: "num", text: String(i.index) }),
          el("td", { class: "num", text: fmt(i.resources.cpu, 2) }), el("td", { class: "num", text: fmt(i.resources.ram_bytes / 1048576, 0) }),
          el("td", { class: "num pid", text: i.pid ? String(i.pid) : "–" }), el("td", { text: when(i.started_unix) }),
          el("td", { class: "num restarts", text: String(i.restarts) }),
          el("td", {}, el("a", { class: "log-link", target: "_blank", rel: "noopener", text: "last 64 KiB",
            href: "/topologies/containerfiledata?" + new URLSearchParams({ ...p, container: String(c.id),
              path: `instance-${i.component}-${i.task}.log`, offset: "-65536", length: "65536" }) }))));
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
      const t = el("table", { id: "exception-table" }, el("thead", {}, el("tr", {},
        ...["Component", "Message", "Count", "Tasks", "Last seen"].map(h => el("th", { class: h === "Count" ? "num" : "", text: h })))));
      const tb = el("tbody");
      for (const s of ex.summary) {
        const msg = el("td", {}, el("div", { class: "message", text: s.message }));
        if (s.last_stack) msg.append(el("details", {}, el("summary", { text: "last stack" }), el("pre", { class: "stack", text: s.last_stack })));
        tb.append(el("tr", { class: "exception", "data-component": s.component, "data-count": String(s.count) },
          el("td", { text: s.component }), msg, el("td", { class: "num count", text: String(s.count) }),
          el("td", { text: s.tasks.join(", ") }), el("td", { text: when(s.last_unix_nanos / 1e9) })));
      }
      t.append(tb);
      box.replaceChildren(t);
    }

    refresh();
  }

  function route() {
    generation++;
    clearTimeout(timer);
    const gen = generation;
    const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
    if (parts[0] === "topology" && parts.length === 3) topologyView(gen, parts[1], parts[2]);
    else listView(gen);
  }

  window.addEventListener("hashchange", route);
  route();
})();
