/* flamegraph.js — the script embedded in every glass-flamegraph SVG.
 *
 * Written for SVG documents opened on their own and for SVGs inlined in
 * an HTML page (glass-report), several per page: all state hangs off the
 * <svg> element, nothing is global but fginit().  The geometry comes from
 * data-* attributes on the <svg> and from each frame's <rect>; the frame
 * name is the <title> text up to its last " (".  Must never contain the
 * CDATA terminator.  Exposes on the <svg> element: fgZoom(i), fgUnzoom(),
 * fgSearch(re) returning the matched percentage, for tests and dashboards. */
"use strict";
function fginit(evt) {
	var root = evt && evt.target ? evt.target : evt;
	if (!root || root.fgState)
		return;
	var num = function (n) { return parseFloat(root.getAttribute("data-" + n)); };
	var W = num("width"), xpad = num("xpad"), fh = num("fh"), font = num("font");
	var base = num("base"), inverted = num("inverted") === 1;
	var nametype = root.getAttribute("data-nametype") || "";
	var q = function (id) { return root.querySelector("[id='" + id + "']"); };
	var details = q("details"), unzoomBtn = q("unzoom"), searchBtn = q("search");
	var matched = q("matched"), frames = q("frames"), icBtn = q("ignorecase");
	var st = { items: [], zoomed: null, term: null, ic: false };
	root.fgState = st;

	var gs = frames.children;
	for (var i = 0; i < gs.length; i++) {
		var g = gs[i], r = g.querySelector("rect"), t = g.querySelector("text");
		var title = g.querySelector("title").textContent;
		var cut = title.lastIndexOf(" (");
		var y = parseFloat(r.getAttribute("y"));
		g.fgIndex = i;
		st.items.push({
			g: g, r: r, t: t, title: title,
			name: cut >= 0 ? title.substring(0, cut) : title,
			x: parseFloat(r.getAttribute("x")), w: parseFloat(r.getAttribute("width")),
			d: Math.round(Math.abs(y - base) / fh), fill: r.getAttribute("fill")
		});
	}

	function show(it, on) {
		if (on) it.g.classList.remove("hide"); else it.g.classList.add("hide");
	}
	/* Same rule as the C side: room for (w - 6) / (0.59 font) characters. */
	function fit(it, x, w) {
		it.r.setAttribute("x", x.toFixed(2));
		it.r.setAttribute("width", w.toFixed(2));
		if (!it.t)
			return;
		it.t.setAttribute("x", (x + 3).toFixed(2));
		var chars = Math.floor((w - 6) / (0.59 * font));
		var name = Array.from(it.name);
		it.t.textContent = chars < 3 ? "" :
			name.length <= chars ? it.name : name.slice(0, chars - 2).join("") + "..";
	}
	function zoom(z) {
		var eps = 0.02, full = W - 2 * xpad, ratio = full / z.w;
		st.zoomed = z;
		unzoomBtn.classList.remove("hide");
		st.items.forEach(function (it) {
			var end = it.x + it.w;
			if (it.d < z.d) {
				var anc = it.x <= z.x + eps && end >= z.x + z.w - eps;
				show(it, anc);
				if (anc) {
					it.g.classList.add("parent");
					fit(it, xpad, full);
				}
			} else {
				var inside = it.x >= z.x - eps && end <= z.x + z.w + eps;
				show(it, inside);
				it.g.classList.remove("parent");
				if (inside)
					fit(it, xpad + (it.x - z.x) * ratio, it.w * ratio);
			}
		});
	}
	function unzoom() {
		st.zoomed = null;
		unzoomBtn.classList.add("hide");
		st.items.forEach(function (it) {
			show(it, true);
			it.g.classList.remove("parent");
			fit(it, it.x, it.w);
		});
	}
	/* Highlight names matching RE; returns the percentage of the total
	 * covered by matches (nested matches counted once). */
	function search(term) {
		var re, spans = [];
		st.term = null;
		st.items.forEach(function (it) { it.r.setAttribute("fill", it.fill); });
		if (!term) {
			matched.textContent = " ";
			searchBtn.textContent = "Search";
			return 0;
		}
		try {
			re = new RegExp(term, st.ic ? "i" : "");
		} catch (e) {
			matched.textContent = "Bad regex";
			return -1;
		}
		st.term = term;
		st.items.forEach(function (it) {
			if (re.test(it.name)) {
				it.r.setAttribute("fill", "rgb(230,0,230)");
				spans.push([it.x, it.x + it.w]);
			}
		});
		spans.sort(function (a, b) { return a[0] - b[0]; });
		var sum = 0, s = -1, e = -1;
		spans.forEach(function (p) {
			if (p[0] > e) {
				sum += e - s;
				s = p[0];
				e = p[1];
			} else if (p[1] > e) {
				e = p[1];
			}
		});
		sum += e - s;
		var pct = 100 * sum / (W - 2 * xpad);
		if (pct > 100)
			pct = 100;
		matched.textContent = "Matched: " + pct.toFixed(1) + "%";
		searchBtn.textContent = "Reset Search";
		return pct;
	}

	frames.addEventListener("click", function (e) {
		var g = e.target.closest ? e.target.closest("g") : null;
		if (g && g.fgIndex !== undefined)
			zoom(st.items[g.fgIndex]);
	});
	frames.addEventListener("mouseover", function (e) {
		var g = e.target.closest ? e.target.closest("g") : null;
		if (g && g.fgIndex !== undefined)
			details.textContent = nametype + " " + st.items[g.fgIndex].title;
	});
	frames.addEventListener("mouseout", function () { details.textContent = " "; });
	unzoomBtn.addEventListener("click", unzoom);
	searchBtn.addEventListener("click", function () {
		if (st.term !== null) {
			search(null);
			return;
		}
		var term = window.prompt("Search (regular expression)", "");
		if (term)
			search(term);
	});
	/* "ic": case-insensitive search, re-applied to the current term. */
	icBtn.addEventListener("click", function () {
		st.ic = !st.ic;
		if (st.ic) icBtn.classList.add("on"); else icBtn.classList.remove("on");
		if (st.term !== null)
			search(st.term);
	});
	root.fgZoom = function (i) { zoom(st.items[i]); };
	root.fgUnzoom = unzoom;
	root.fgSearch = search;
	/* Standalone documents: ?s=REGEX searches on load, Ctrl-F searches. */
	if (root === document.documentElement) {
		var m = /[?&]s=([^&]*)/.exec(window.location.search);
		if (m)
			search(decodeURIComponent(m[1]));
		window.addEventListener("keydown", function (e) {
			if (e.ctrlKey && e.keyCode === 70) {
				e.preventDefault();
				searchBtn.dispatchEvent(new MouseEvent("click"));
			}
		});
	}
}
