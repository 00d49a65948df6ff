// Sortable tables without a library. The page reads fine without it: headings
// become buttons only once this has run, and the tables keep their input order.
// A sort is kept in the address (#sort=<table>.<column>.<asc|desc>), so a sorted
// view can be shared and survives a reload.
(function () {
  "use strict";
  function keyOf(cell) {
    var raw = cell ? cell.getAttribute("data-sort") : null;
    if (raw === null && cell) raw = cell.textContent.trim();
    if (raw === null || raw === "") return null;
    var n = Number(raw);
    return isNaN(n) ? raw.toLowerCase() : n;
  }
  function compare(a, b) {
    if (typeof a === typeof b) return a < b ? -1 : a > b ? 1 : 0;
    return typeof a === "number" ? -1 : 1;
  }
  function sortTable(table, th, dir) {
    var col = th.cellIndex;
    var body = table.tBodies[0];
    var rows = Array.prototype.map.call(body.rows, function (row, i) {
      return { row: row, key: keyOf(row.cells[col]), i: i };
    });
    rows.sort(function (x, y) {
      // Blank cells stay last whichever way the column is sorted.
      if (x.key === null || y.key === null) {
        if (x.key === y.key) return x.i - y.i;
        return x.key === null ? 1 : -1;
      }
      var c = compare(x.key, y.key);
      if (dir === "desc") c = -c;
      return c || x.i - y.i;
    });
    rows.forEach(function (r) { body.appendChild(r.row); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (h) {
      h.setAttribute("aria-sort", h === th ? (dir === "asc" ? "ascending" : "descending") : "none");
    });
    table.setAttribute("data-sorted-by", th.getAttribute("data-key") + "." + dir);
  }
  function remember(table, th, dir) {
    var hash = "#sort=" + table.id + "." + th.getAttribute("data-key") + "." + dir;
    try { history.replaceState(null, "", hash); } catch (e) { /* file:// may refuse; sorting still works */ }
  }
  var tables = document.querySelectorAll("table.sortable");
  Array.prototype.forEach.call(tables, function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
      if (!th.hasAttribute("data-key")) return;
      var button = document.createElement("button");
      button.type = "button";
      button.className = "sort";
      while (th.firstChild) button.appendChild(th.firstChild);
      th.appendChild(button);
      th.setAttribute("aria-sort", "none");
      button.addEventListener("click", function () {
        var dir = th.getAttribute("aria-sort") === "ascending" ? "desc" : "asc";
        sortTable(table, th, dir);
        remember(table, th, dir);
      });
    });
    table.setAttribute("data-sortable", "ready");
  });
  var m = /^#sort=([\w-]+)\.([\w-]+)\.(asc|desc)$/.exec(location.hash);
  if (m) {
    var table = document.getElementById(m[1]);
    var th = table && table.querySelector('th[data-key="' + m[2] + '"]');
    if (th) sortTable(table, th, m[3]);
  }
  document.documentElement.classList.add("js");
})();
