/* memprobe report page: builds the DOM from the JSON data element.
 * Every string from the data is inserted with textContent, never as HTML. */
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("memprobe-data").textContent);
  var app = document.getElementById("app");
  var charts = [];
  var COLORS = { leak: "#c62828", no_leak: "#2e7d32", inconclusive: "#b26a00" };
  var STATUS_VERDICT = {
    fixed: "no_leak", improved: "no_leak", same: "same", persisting: "leak",
    new: "leak", regressed: "leak", not_compared: "inconclusive"
  };

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }

  function add(parent, child) { parent.appendChild(child); return child; }

  /* Tick labels with just enough decimals to tell neighbouring ticks apart. */
  function scaled(v, base, units, step) {
    var a = Math.abs(v), i = 0;
    while (a >= base && i < units.length - 1) { a /= base; i += 1; }
    var div = Math.pow(base, i);
    var dec = step > 0 ? Math.max(0, Math.min(4, Math.ceil(-Math.log10(step / div) + 0.0001))) : (i === 0 ? 0 : 1);
    return (v < 0 ? "-" : "") + a.toFixed(dec) + units[i];
  }

  function fmtBytes(v, step) {
    if (v === null || v === undefined || !isFinite(v)) { return ""; }
    return scaled(v, 1024, [" B", " KiB", " MiB", " GiB", " TiB"], step === undefined ? -1 : step);
  }

  function fmtCount(v, step) {
    if (v === null || v === undefined || !isFinite(v)) { return ""; }
    if (Math.abs(v) < 1e4) { return scaled(v, 1e9, [""], step === undefined ? (v === Math.round(v) ? 1 : 0.01) : step); }
    return scaled(v, 1000, ["", "k", "M", "G", "T"], step === undefined ? -1 : step);
  }

  function ticks(fmt) {
    return function (u, vals) {
      var step = vals.length > 1 ? Math.abs(vals[1] - vals[0]) : -1;
      return vals.map(function (v) { return fmt(v, step); });
    };
  }

  function fmtX(axis) {
    return function (v) { return axis === "step" ? String(Math.round(v)) : v.toFixed(1) + " s"; };
  }

  function header() {
    add(app, el("h1", null, data.title));
    var v = add(app, el("p", "verdict verdict-" + (data.verdict || "none"), data.verdict_text));
    v.id = "verdict";
    var dl = add(app, el("dl", "meta"));
    (data.meta || []).forEach(function (row) {
      add(dl, el("dt", null, row[0]));
      add(dl, el("dd", null, row[1]));
    });
    if (data.notes && data.notes.length) {
      add(app, el("h2", null, "Notes: what could not be compared"));
      var ul = add(app, el("ul", "notes"));
      data.notes.forEach(function (n) { add(ul, el("li", null, n)); });
    }
  }

  function findings() {
    add(app, el("h2", null, "Findings"));
    if (!data.findings.length) { add(app, el("p", "none", "No findings.")); return; }
    var list = add(app, el("ol", "findings"));
    data.findings.forEach(function (f) {
      var li = add(list, el("li", "finding finding-" + f.verdict));
      add(li, el("div", "finding-title", f.title));
      if (f.explanation) { add(li, el("div", "explanation", f.explanation)); }
      var dl = add(li, el("dl", "finding-rows"));
      f.rows.forEach(function (row) {
        add(dl, el("dt", null, row[0]));
        add(dl, el("dd", "row-" + row[0], row[1]));
      });
      if (f.chain && f.chain.length) {
        add(dl, el("dt", null, "holder chain"));
        var ol = add(add(dl, el("dd")), el("ol", "chain"));
        f.chain.forEach(function (link) { add(ol, el("li", null, link)); });
      }
    });
  }

  function table(columns, rows) {
    var t = el("table", "diff-table");
    var tr = add(add(t, el("thead")), el("tr"));
    columns.forEach(function (c) { add(tr, el("th", null, c)); });
    var tb = add(t, el("tbody"));
    rows.forEach(function (r) {
      var row = add(tb, el("tr", "status-" + r.status));
      r.cells.forEach(function (c) { add(row, el("td", null, c)); });
    });
    return t;
  }

  /* uPlot plugin: shade the warm-up and label it. */
  function warmupPlugin(endX) {
    return {
      hooks: {
        drawClear: function (u) {
          if (endX === null || endX === undefined) { return; }
          var x0 = u.bbox.left, x1 = u.valToPos(endX, "x", true);
          x1 = Math.min(Math.max(x1, x0), u.bbox.left + u.bbox.width);
          var ctx = u.ctx;
          ctx.save();
          ctx.fillStyle = "rgba(120, 120, 120, 0.15)";
          ctx.fillRect(x0, u.bbox.top, x1 - x0, u.bbox.height);
          ctx.fillStyle = "rgba(80, 80, 80, 0.9)";
          ctx.font = Math.round(11 * devicePixelRatio) + "px sans-serif";
          ctx.fillText("warm-up", x0 + 4 * devicePixelRatio, u.bbox.top + 14 * devicePixelRatio);
          ctx.restore();
        }
      }
    };
  }

  /* uPlot plugin: memprobe.mark() labels as vertical dashed lines. */
  function marksPlugin(marks) {
    return {
      hooks: {
        draw: function (u) {
          if (!marks || !marks.length) { return; }
          var ctx = u.ctx, dpr = devicePixelRatio, left = u.bbox.left, right = left + u.bbox.width;
          ctx.save();
          ctx.strokeStyle = "rgba(230, 120, 0, 0.8)";
          ctx.fillStyle = "rgba(160, 80, 0, 0.95)";
          ctx.setLineDash([4 * dpr, 3 * dpr]);
          ctx.font = Math.round(10 * dpr) + "px sans-serif";
          marks.forEach(function (m, i) {
            var x = u.valToPos(m.x, "x", true);
            if (!(x >= left && x <= right)) { return; }
            ctx.beginPath(); ctx.moveTo(x, u.bbox.top); ctx.lineTo(x, u.bbox.top + u.bbox.height); ctx.stroke();
            ctx.fillText(m.label, x + 3 * dpr, u.bbox.top + (24 + 11 * (i % 3)) * dpr);
          });
          ctx.restore();
        }
      }
    };
  }

  function chartWidth(box) { return Math.max(280, Math.min(box.clientWidth || 600, 900) - 16); }

  function reportChart(card, ch) {
    var color = COLORS[ch.verdict] || "#1565c0";
    var xs = ch.x.slice(), ys = ch.y.slice(), fit = ch.fit ? ch.fit.slice() : null;
    var lim = ch.limit;
    var xMax = xs.length ? xs[xs.length - 1] : 0;
    var hasProj = lim && lim.x !== null && lim.x !== undefined && lim.x > xMax;
    if (hasProj) {  /* one extra point at the projected step, hidden until asked for */
      xs.push(lim.x); ys.push(null);
      if (fit) { fit.push(lim.value); }
    }
    var series = [{ label: ch.axis === "step" ? "step" : "time", value: function (u, v) { return v === null ? "" : fmtX(ch.axis)(v); } },
      { label: ch.name, stroke: color, width: 1.5, points: { show: ch.x.length <= 40 } }];
    var cols = [xs, ys];
    if (fit) { series.push({ label: "fitted slope", stroke: "#1565c0", dash: [8, 5], width: 2, spanGaps: true, points: { show: false } }); cols.push(fit); }
    if (lim) {
      series.push({ label: "limit", stroke: "#6a1b9a", dash: [2, 3], width: 1.5, show: false, points: { show: false } });
      cols.push(xs.map(function () { return lim.value; }));
    }
    var fmtY = ch.unit === "bytes" ? fmtBytes : fmtCount;
    series.forEach(function (s, i) { if (i > 0) { s.value = function (u, v) { return v === null ? "" : fmtY(v); }; } });
    var opts = {
      width: chartWidth(card), height: 220, series: series,
      scales: { x: { time: false } },
      axes: [{ values: function (u, vals) { return vals.map(fmtX(ch.axis)); } },
             { size: 80, values: ticks(fmtY) }],
      plugins: [warmupPlugin(ch.warmup_end_x), marksPlugin(ch.marks)],
      hooks: { ready: [function (u) { if (hasProj) { u.setScale("x", { min: xs[0], max: xMax }); } }] }
    };
    var holder = add(card, el("div", "chart"));
    var u = new uPlot(opts, cols, holder);
    charts.push({ plot: u, box: card });
    if (lim) {
      var p = add(card, el("p", "projection", lim.text));
      if (hasProj) {
        var btn = add(p, el("button", "toggle", "show projection"));
        btn.type = "button";
        var shown = false;
        btn.addEventListener("click", function () {
          shown = !shown;
          u.setSeries(cols.length - 1, { show: shown });
          u.setScale("x", { min: xs[0], max: shown ? lim.x : xMax });
          btn.textContent = shown ? "hide projection" : "show projection";
        });
      }
    }
  }

  function diffChart(card, ch) {
    var tables = [], series = [{ label: ch.axis === "step" ? "step" : "time" }];
    if (ch.before) { tables.push([ch.before.x, ch.before.y]); series.push({ label: "before", stroke: "#888", width: 1.5, spanGaps: true, points: { show: false } }); }
    if (ch.after) { tables.push([ch.after.x, ch.after.y]); series.push({ label: "after", stroke: COLORS[STATUS_VERDICT[ch.status]] || "#1565c0", width: 1.5, spanGaps: true, points: { show: false } }); }
    if (!tables.length) { return; }
    var fmtY = ch.unit === "bytes" ? fmtBytes : fmtCount;
    var cols = tables.length === 1 ? tables[0] : uPlot.join(tables);
    var opts = {
      width: chartWidth(card), height: 200, series: series, scales: { x: { time: false } },
      axes: [{ values: function (u, vals) { return vals.map(fmtX(ch.axis)); } },
             { size: 80, values: ticks(fmtY) }]
    };
    charts.push({ plot: new uPlot(opts, cols, add(card, el("div", "chart"))), box: card });
  }

  function processes() {
    add(app, el("h2", null, data.kind === "diff" ? "Signals over the run" : "Processes"));
    data.processes.forEach(function (p) {
      var sec = add(app, el("section", "process"));
      var h = add(sec, el("h3", null, p.title));
      add(h, el("span", "sub", " " + p.subtitle));
      if (p.argv) { add(sec, el("p", "argv", p.argv)); }
      if (!p.charts.length) { add(sec, el("p", "none", "No samples.")); }
      var grid = add(sec, el("div", "charts"));
      p.charts.forEach(function (ch) {
        var card = add(grid, el("div", "card"));
        var t = add(card, el("div", "card-title"));
        add(t, el("span", "signal", ch.name));
        add(t, el("span", "badge verdict-" + (ch.verdict || "none"), ch.verdict_text));
        if (ch.rate_text) { add(t, el("span", "rate", ch.rate_text + " · peak " + ch.peak_text)); }
        if (ch.warmup_text) { add(card, el("div", "warmup", "warm-up until " + ch.warmup_text + " (shaded)")); }
        if (data.kind === "diff") { diffChart(card, ch); } else { reportChart(card, ch); }
      });
    });
  }

  function events() {
    if (!data.events || !data.events.length) { return; }
    add(app, el("h2", null, "Events"));
    var ul = add(app, el("ul", "events"));
    data.events.forEach(function (e) { add(ul, el("li", null, e[0] + "  " + e[1])); });
  }

  app.textContent = "";
  header();
  if (data.kind === "diff") {
    add(app, el("h2", null, "Signals"));
    add(app, table(data.signal_columns, data.signal_rows));
    add(app, el("h2", null, "Findings"));
    if (data.finding_rows.length) { add(app, table(data.finding_columns, data.finding_rows)); } else { add(app, el("p", "none", "No findings in either run.")); }
  } else {
    findings();
  }
  processes();
  events();
  window.addEventListener("resize", function () {
    charts.forEach(function (c) { c.plot.setSize({ width: chartWidth(c.box), height: c.plot.height }); });
  });
  document.body.setAttribute("data-rendered", String(charts.length));
})();
