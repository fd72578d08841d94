// SPDX-License-Identifier: Apache-2.0
// interact_trace.js - appended to a trace view page by tests/observe/observe.sh (browser):
// what a person does with it, by synthetic events: hover a stream's operation (one time
// base: start, end and enqueue times in ms from the trace start, durations in us/ms),
// press 0 (whole run) and b (busiest stretch), zoom with the wheel down to microseconds
// (tick labels never overlap), make the window narrower (the view follows). Sets
// data-interact="ok" on the body or the first failure; data-interact-tips holds the
// tooltips seen.
"use strict";
setTimeout(function () {
  const body = document.body, tip = document.getElementById("tip"), tips = [];
  function fail(msg) { body.dataset.interact = String(msg).replace(/\n/g, " / "); }
  try {
    const c = document.getElementById("view");
    function send(type, x, y, extra) {
      const r = c.getBoundingClientRect(), Ctor = type === "wheel" ? WheelEvent : MouseEvent;
      c.dispatchEvent(new Ctor(type, Object.assign({ clientX: r.left + x, clientY: r.top + y, bubbles: true, cancelable: true }, extra || {})));
    }
    function key(k) { window.dispatchEvent(new KeyboardEvent("keydown", { key: k })); }
    /* at least `least` tick labels, none overlapping the next */
    function gap(when, least) {
      const g = body.dataset.tickGap, n = parseInt(body.dataset.ticks, 10);
      if (!(n >= least)) throw new Error("fewer than " + least + " tick labels " + when + " (" + body.dataset.ticks + ", view " + body.dataset.view + " ms)");
      if (n >= 2 && !(parseFloat(g) >= 0)) throw new Error("tick labels overlap " + when + " (gap " + g + ")");
    }
    key("0");
    if (body.dataset.window !== "all") throw new Error("0 did not show the whole run: " + body.dataset.window);
    /* a stream operation with its enqueue time: scan the rows below the host's */
    let span = null;
    const W = c.getBoundingClientRect().width, H = c.getBoundingClientRect().height;
    for (let y = 30; y < H && !span; y += 6)
      for (let x = 2; x < W; x += 2) {
        send("mousemove", x, y);
        if (!tip.hidden && /\bstream\n/.test(tip.textContent.split("\n")[0] + "\n") && /enqueued at/.test(tip.textContent)) { span = tip.textContent; break; }
      }
    if (!span) throw new Error("no tooltip of a stream operation with its enqueue time");
    tips.push(span);
    if (!/\nstart \d+\.\d{3} ms {3}end \d+\.\d{3} ms {3}duration \d+(\.\d+)? (ns|\u00b5s|ms)\n/.test(span))
      throw new Error("the operation's times are not ms from the start with a duration: " + span);
    if (!/\nenqueued at \d+\.\d{3} ms/.test(span) || /enqueued_us/.test(span))
      throw new Error("the enqueue time is not on the same time base: " + span);
    key("b");
    if (body.dataset.window !== "busiest") throw new Error("b did not show the busiest stretch: " + body.dataset.window);
    for (let i = 0; i < 60; i++) { send("wheel", W * 0.6, 40, { deltaY: -100 }); }
    if (body.dataset.window !== "custom") throw new Error("the wheel did not zoom: " + body.dataset.window);
    setTimeout(function () {
      try {
        gap("zoomed in to " + body.dataset.view + " ms", 2);
        document.getElementById("wrap").style.width = "600px";
        window.dispatchEvent(new Event("resize"));
        setTimeout(function () {
          try {
            gap("at 600 px", 1);
            const w = parseFloat(c.style.width), box = document.getElementById("wrap").clientWidth - 16;
            if (Math.abs(w - box) > 1) throw new Error("the timeline is " + w + " px wide in a box of " + box + " after a resize");
            body.dataset.interactTips = tips.join(" | ").replace(/\n/g, " / ");
            body.dataset.interact = "ok";
          } catch (e) { fail(e.message); }
        }, 200);
      } catch (e) { fail(e.message); }
    }, 200);
  } catch (e) { fail(e.message); }
}, 50);
