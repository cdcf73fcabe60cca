// ppo-grader live pages: reload when a submission is added or a verdict arrives.
// The page carries the change mark it was drawn at (data-live-mark); this polls the
// same-origin JSON at data-live every 5 s (30 s while the tab is hidden) and reloads
// when the server's mark differs. No other script runs on these pages.
(function () {
  "use strict";
  var body = document.body;
  var url = body.getAttribute("data-live");
  var mark = body.getAttribute("data-live-mark");
  if (!url || mark === null) { return; }
  var failures = 0;
  function schedule() {
    window.setTimeout(check, document.hidden ? 30000 : 5000);
  }
  function check() {
    window.fetch(url, { credentials: "same-origin", cache: "no-store", headers: { "Accept": "application/json" } })
      .then(function (response) {
        if (!response.ok) { throw new Error("HTTP " + response.status); }
        return response.json();
      })
      .then(function (answer) {
        failures = 0;
        if (answer.mark !== mark) { window.location.reload(); return; }
        schedule();
      })
      .catch(function () {
        failures += 1;
        if (failures < 20) { schedule(); }  // a logged-out or unreachable server: stop after a while
      });
  }
  schedule();
})();
