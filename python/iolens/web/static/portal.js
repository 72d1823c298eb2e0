// The portal's only script: draws each page's plotly figures from their JSON blocks (no inline script runs:
// the Content-Security-Policy allows this server's scripts only), with plotly's cloud and logo buttons off.
(function () {
  "use strict";
  var config = {
    displaylogo: false,
    responsive: true,
    showSendToCloud: false,
    showEditInChartStudio: false,
    modeBarButtonsToRemove: ["sendDataToCloud", "editInChartStudio"]
  };
  window.iolensPlotConfig = config;
  function draw() {
    if (typeof Plotly === "undefined") { return; }
    document.querySelectorAll("div[data-figure]").forEach(function (el) {
      var src = document.getElementById(el.getAttribute("data-figure"));
      if (!src) { return; }
      var fig = JSON.parse(src.textContent);
      Plotly.newPlot(el, fig.data, fig.layout, config).then(function () {
        el.setAttribute("data-drawn", "1");
      });
    });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", draw);
  } else {
    draw();
  }
})();
