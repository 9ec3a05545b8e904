/* Column sorting for the leaderboard's tables (vqalib.compendium.leaderboard_files), as progressive enhancement:
   without this script the tables read in rank order. Each column header of a table.sortable gets a button that
   sorts its rows (numbers numerically, blanks last, ties in rank order; pressed again, the other way), sets
   aria-sort on that header and says the new order in a polite live region. Local, no library. */
(function () {
  "use strict";
  var NUMBER = /^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?(\s+to\s+.*)?$/i; // "0.4123" or an interval "0.40 to 0.61"
  var collator = new Intl.Collator(undefined, { numeric: true, sensitivity: "base" });
  var tables = document.querySelectorAll("table.sortable");
  if (!tables.length) return;

  var live = document.createElement("p"); // visually hidden with inline styles: the standalone page has no CSS
  live.setAttribute("role", "status");
  live.setAttribute("aria-live", "polite");
  live.className = "sort-status";
  live.style.cssText = "position:absolute;width:1px;height:1px;margin:-1px;padding:0;overflow:hidden;" +
    "clip-path:inset(50%);white-space:nowrap;border:0";
  (document.querySelector("main") || document.body).appendChild(live);

  function text(cell) { return cell ? cell.textContent.trim() : ""; }

  function sortBy(table, column, button) {
    var head = table.tHead.rows[0].cells[column];
    var ascending = head.getAttribute("aria-sort") !== "ascending";
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var values = rows.map(function (row) { return text(row.cells[column]); });
    var numeric = values.every(function (v) { return v === "" || NUMBER.test(v); });
    var keyed = rows.map(function (row, i) {
      var v = values[i];
      return { row: row, blank: v === "", key: numeric ? parseFloat(v) : v, rank: Number(row.dataset.rank) };
    });
    keyed.sort(function (a, b) {
      if (a.blank !== b.blank) return a.blank ? 1 : -1; // blanks last either way
      var c = a.blank ? 0 : numeric ? a.key - b.key : collator.compare(a.key, b.key);
      return (ascending ? c : -c) || a.rank - b.rank;
    });
    keyed.forEach(function (k) { body.appendChild(k.row); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
      th.removeAttribute("aria-sort");
      var mark = th.querySelector(".sort-mark");
      if (mark) mark.textContent = "";
    });
    head.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    button.querySelector(".sort-mark").textContent = ascending ? "\u00A0\u25B2" : "\u00A0\u25BC";
    var label = button.querySelector(".sort-label").textContent.trim();
    live.textContent = "Sorted by " + label + ", " + (ascending ? "ascending" : "descending");
  }

  Array.prototype.forEach.call(tables, function (table) {
    if (!table.tHead || !table.tBodies.length) return;
    Array.prototype.forEach.call(table.tBodies[0].rows, function (row, i) { row.dataset.rank = String(i); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, column) {
      var button = document.createElement("button");
      var label = document.createElement("span");
      var mark = document.createElement("span");
      button.type = "button";
      button.className = "sort-button";
      label.className = "sort-label";
      mark.className = "sort-mark";
      mark.setAttribute("aria-hidden", "true");
      while (th.firstChild) label.appendChild(th.firstChild);
      button.appendChild(label);
      button.appendChild(mark);
      th.appendChild(button);
      button.addEventListener("click", function () { sortBy(table, column, button); });
    });
  });
})();
