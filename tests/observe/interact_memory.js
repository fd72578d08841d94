// SPDX-License-Identifier: Apache-2.0
// interact_memory.js - appended to a memory view page by tests/observe/observe.sh (browser):
// what a person does with it, by synthetic events: hover the segment map, the active
// memory timeline and the allocated/reserved chart (tooltips name the stream with
// streamLabel, times in ms), zoom with the wheel (drawn again), drag-select a stretch,
// double-click back, colour the bands by tag, make the window narrower (the charts
// follow). Sets data-interact="ok" on the body or the first failure; data-interact-tips
// holds the tooltips seen.
"use strict";
setTimeout(function () {
  const body = document.body, tip = document.getElementById("tip"), tips = [];
  function fail(msg) { body.dataset.interact = String(msg).replace(/\n/g, " / "); }
  try {
    const named = (body.dataset.expectStream || "").split(",").filter(Boolean);
    const canvases = document.querySelectorAll(".chart canvas");
    if (canvases.length < 3) return fail("expected 3 charts, found " + canvases.length);
    const [seg, act, line] = canvases;
    function send(c, type, x, y, extra) {
      const r = c.getBoundingClientRect(), Ctor = type === "wheel" ? WheelEvent : MouseEvent;
      c.dispatchEvent(new Ctor(type, Object.assign({ clientX: r.left + x, clientY: r.top + y, bubbles: true, cancelable: true, button: 0 }, extra || {})));
    }
    /* the first tooltip along a row of the canvas */
    function hover(c, y, what) {
      for (let x = 2; x < c.getBoundingClientRect().width; x += 3) {
        send(c, "mousemove", x, y);
        if (!tip.hidden && tip.textContent) { tips.push(tip.textContent); return tip.textContent; }
      }
      throw new Error("no tooltip on the " + what);
    }
    function hasStream(text, what) {
      if (!/stream /.test(text)) throw new Error("the " + what + " tooltip names no stream: " + text);
      if (named.length && !named.some(function (n) { return text.indexOf("stream " + n + " (0x") >= 0; }))
        throw new Error("the " + what + " tooltip does not name the stream (" + named + "): " + text);
    }
    hasStream(hover(seg, 8, "segment map"), "segment map");
    const h = act.getBoundingClientRect().height;
    const band = hover(act, h - 40, "active memory timeline");
    hasStream(band, "active memory timeline");
    if (!/allocated (at \d+\.\d{3} ms|before the history began)/.test(band) || !/(freed at \d+\.\d{3} ms|still allocated)/.test(band))
      throw new Error("the band's tooltip lacks its times: " + band);
    if (!/ at 0x[0-9a-f]+/.test(band)) throw new Error("the band's tooltip lacks its address: " + band);
    const point = hover(line, 100, "allocated/reserved chart");
    if (!/^\d+\.\d{3} ms\n/.test(point)) throw new Error("the chart's tooltip lacks its time: " + point);
    /* zoom: the wheel (the timeline is drawn again), a dragged stretch, a
       double-click back */
    const where = document.querySelector(".tools span"), whole = where.textContent;
    const reset = document.querySelector(".tools button");
    if (!reset.disabled) throw new Error("'whole history' is enabled before any zoom");
    const pixels = act.toDataURL();
    send(act, "wheel", 300, 100, { deltaY: -100 });
    const wheeled = where.textContent;
    if (wheeled === whole) throw new Error("the wheel did not zoom: " + wheeled);
    setTimeout(function () {
      try {
        if (act.toDataURL() === pixels) throw new Error("the timeline was not drawn again after zooming");
        send(act, "mousedown", 200, 100); send(act, "mousemove", 400, 100); send(act, "mouseup", 400, 100);
        if (where.textContent === wheeled) throw new Error("dragging a stretch did not zoom: " + where.textContent);
        if (reset.disabled) throw new Error("'whole history' is disabled while zoomed");
        send(act, "dblclick", 300, 100);
        if (where.textContent !== whole) throw new Error("double-click did not show the whole history: " + where.textContent);
        /* colour by tag: the legend lists the tags */
        const by = document.querySelector(".tools select");
        by.value = "tag"; by.dispatchEvent(new Event("change"));
        const legend = act.closest("section").querySelectorAll(".legend")[1].textContent;
        if (legend.indexOf("(untagged)") < 0) throw new Error("colouring by tag shows no tag legend: " + legend);
        /* a narrower window: every chart follows its box */
        document.querySelector("main").style.width = "700px";
        window.dispatchEvent(new Event("resize"));
        setTimeout(function () {
          try {
            for (const c of canvases) {
              const box = c.parentNode.clientWidth, w = parseFloat(c.style.width);
              if (Math.abs(box - w) > 1) throw new Error("a chart is " + w + " px wide in a box of " + box + " after a resize");
            }
            body.dataset.interactTips = tips.join(" | ").replace(/\n/g, " / ");
            body.dataset.interact = "ok";
          } catch (e) { fail(e.message); }
        }, 300);
      } catch (e) { fail(e.message); }
    }, 300);
  } catch (e) { fail(e.message); }
}, 50);
