// xgate console: the live pages refresh their main part every two seconds while the tab is visible.
// Without JavaScript every page still reads; this only keeps the figures current.
(function () {
  "use strict";
  var main = document.getElementById("main");
  var source = main && main.getAttribute("data-live");
  if (!source) { return; }
  function refresh() {
    if (document.hidden) { return; }
    fetch(source, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (answer) { return answer.ok ? answer.text() : null; })
      .then(function (html) { if (html !== null) { main.innerHTML = html; } })
      .catch(function () { /* the next tick tries again */ });
  }
  setInterval(refresh, 2000);
})();
