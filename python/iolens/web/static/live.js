// The live view (/live?host=H): follows /live/stream, the server-sent events of the host's new samples, and
// puts each into the table of values and the plot. No inline script runs (the Content-Security-Policy
// allows this server's scripts only); every text from the stream goes in as text, never as markup.
(function () {
  "use strict";
  var root = document.getElementById("live");
  if (!root || typeof EventSource === "undefined") { return; }
  var host = root.getAttribute("data-host");
  var since = root.getAttribute("data-since");
  var tbody = document.querySelector("#live-values tbody");
  var status = document.getElementById("live-status");
  var lastSeen = document.getElementById("live-last");
  var plot = document.getElementById("live-plot");
  var MAX_POINTS = 900;
  var labels = {};
  var events = 0;

  // The same figures as the page's first rendering: 4 significant digits, thousands grouped.
  function format(v) {
    if (v === null || !isFinite(v)) { return "-"; }
    if (Math.abs(v) >= 1e4) { return Math.round(v).toLocaleString("en-US"); }
    return String(Number(v.toPrecision(4)));
  }
  function clock(t) { return new Date(t * 1000).toISOString().substring(11, 19); }
  function cell(text, cls) {
    var td = document.createElement("td");
    td.textContent = text;
    if (cls) { td.className = cls; }
    return td;
  }
  function row(id) {
    var tr = tbody.querySelector('tr[data-series="' + id + '"]');
    if (tr || !labels[id]) { return tr; }
    var l = labels[id];
    tr = document.createElement("tr");
    tr.setAttribute("data-series", id);
    tr.appendChild(cell(l.source));
    tr.appendChild(cell(l.name));
    tr.appendChild(cell("-", "num live-value"));
    tr.appendChild(cell(l.unit));
    tr.appendChild(cell("-", "live-time"));
    tbody.appendChild(tr);
    var empty = document.getElementById("live-empty");
    if (empty) { empty.remove(); }
    return tr;
  }
  function extendPlot(samples) {
    if (!plot || plot.getAttribute("data-drawn") !== "1" || typeof Plotly === "undefined") { return; }
    var index = {};
    (plot.data || []).forEach(function (trace, i) { index[trace.meta] = i; });
    var xs = {}, ys = {};
    samples.forEach(function (s) {
      var i = index[s[0]], l = labels[s[0]];
      if (i === undefined || !l) { return; }
      (xs[i] = xs[i] || []).push(new Date(s[1] * 1000).toISOString().replace("T", " ").replace("Z", ""));
      (ys[i] = ys[i] || []).push(s[2] === null ? null : s[2] / l.div);
    });
    var which = Object.keys(xs).map(Number);
    if (which.length) {
      Plotly.extendTraces(plot, {
        x: which.map(function (i) { return xs[i]; }),
        y: which.map(function (i) { return ys[i]; })
      }, which, MAX_POINTS);
    }
  }
  var url = "/live/stream?host=" + encodeURIComponent(host) + (since ? "&since=" + encodeURIComponent(since) : "");
  var source = new EventSource(url);
  source.onopen = function () { status.textContent = "live"; };
  source.onerror = function () { status.textContent = "reconnecting"; };
  source.onmessage = function (ev) {
    var msg = JSON.parse(ev.data);
    Object.keys(msg.labels || {}).forEach(function (id) { labels[id] = msg.labels[id]; });
    var newest = null;
    (msg.samples || []).forEach(function (s) {
      var tr = row(s[0]), l = labels[s[0]];
      if (!tr || !l) { return; }
      tr.querySelector(".live-value").textContent = format(s[2] === null ? null : s[2] / l.div);
      tr.querySelector(".live-time").textContent = clock(s[1]);
      newest = s[1];
    });
    if (newest !== null) { lastSeen.textContent = clock(newest); }
    extendPlot(msg.samples || []);
    events += 1;
    root.setAttribute("data-events", String(events));
  };
})();
