// Draws a popsim profile from the JSON embedded in the page: the pipeline Gantt
// chart (one row per IPU: tasks above, transfers below) and memory per IPU
// (stacked bars by category against the IPU's limit). No network access.
"use strict";

(function () {
  const SVG_NS = "http://www.w3.org/2000/svg";
  const profile = JSON.parse(document.getElementById("profile-data").textContent);
  const host = JSON.parse(document.getElementById("host-data").textContent);

  function element(name, attributes, parent) {
    const node = document.createElementNS(SVG_NS, name);
    for (const key in attributes) node.setAttribute(key, attributes[key]);
    if (parent) parent.appendChild(node);
    return node;
  }

  function text(parent, x, y, content, attributes) {
    const node = element("text", Object.assign({ x: x, y: y }, attributes || {}), parent);
    node.textContent = content;
    return node;
  }

  function formatBytes(bytes) {
    const units = ["B", "KiB", "MiB", "GiB"];
    let value = bytes;
    let unit = 0;
    while (value >= 1024 && unit < units.length - 1) {
      value /= 1024;
      unit += 1;
    }
    return (unit === 0 ? value : value.toFixed(2)) + " " + units[unit];
  }

  function formatMicroseconds(us) {
    return us >= 1000 ? (us / 1000).toFixed(3) + " ms" : us.toFixed(2) + " \u00b5s";
  }

  function legendItem(parent, colour, label, key) {
    const item = document.createElement("span");
    item.className = "legend-item";
    item.dataset.key = key;
    const swatch = document.createElement("span");
    swatch.className = "swatch";
    swatch.style.background = colour;
    item.appendChild(swatch);
    item.appendChild(document.createTextNode(label));
    parent.appendChild(item);
  }

  function chartWidth(container) {
    return Math.max(720, Math.min(1600, (container.clientWidth || 1000) - 10));
  }

  function drawOverview() {
    document.getElementById("model-name").textContent = profile.model + " (" + profile.kind + ")";
    const parts = [profile.chip, profile.num_ipus + " IPU(s)"];
    if (profile.trace) {
      const t = profile.trace;
      parts.push(t.schedule + " schedule, " + t.stages + " stage(s)");
      parts.push(t.total_cycles.toLocaleString("en-US") + " cycles = " +
                 formatMicroseconds(t.total_cycles / profile.clock_hz * 1e6) + " simulated");
    }
    if (host && host.calls) {
      parts.push("host wall time of call " + host.calls + ": " + host.wall_ms.toFixed(3) + " ms");
    }
    document.getElementById("overview").textContent = parts.join(" \u00b7 ");
  }

  function drawLegend() {
    const legend = document.getElementById("legend");
    for (const kind of profile.kinds) {
      legendItem(legend, profile.kind_colours[kind], profile.kind_labels[kind], kind);
    }
  }

  function drawTimeline() {
    const container = document.getElementById("timeline");
    const trace = profile.trace;
    if (!trace) {
      container.textContent = "The model has not run yet: the trace appears after its first call.";
      return;
    }
    const labelWidth = 70;
    const width = chartWidth(container);
    const plotWidth = width - labelWidth - 20;
    const laneHeight = 22;
    const transferHeight = 10;
    const rowHeight = laneHeight + transferHeight + 14;
    const axisHeight = 24;
    const height = axisHeight + profile.num_ipus * rowHeight;
    const scale = plotWidth / Math.max(1, trace.total_cycles);
    const svg = element("svg", { width: width, height: height, id: "gantt",
                                 viewBox: "0 0 " + width + " " + height,
                                 "shape-rendering": "crispEdges" }, container);

    const axis = element("g", { class: "axis" }, svg);
    const ticks = 8;
    for (let i = 0; i <= ticks; i++) {
      const cycles = trace.total_cycles * i / ticks;
      const x = labelWidth + cycles * scale;
      element("line", { x1: x, x2: x, y1: axisHeight - 6, y2: height }, axis);
      const us = cycles / profile.clock_hz * 1e6;
      text(axis, x, axisHeight - 10, formatMicroseconds(us),
           { "text-anchor": i === 0 ? "start" : i === ticks ? "end" : "middle" });
    }

    const rows = [];
    for (let ipu = 0; ipu < profile.num_ipus; ipu++) {
      const y = axisHeight + ipu * rowHeight + 4;
      const row = element("g", { class: "ipu-row", "data-ipu": ipu }, svg);
      text(row, 4, y + laneHeight / 2 + 4, "IPU " + ipu);
      text(row, 4, y + laneHeight + transferHeight, "transfers", { class: "lane-label" });
      rows.push({ group: row, y: y });
    }
    for (const event of trace.events) {
      const [ipu, kindIndex, start, end, microBatch, step, task] = event;
      const kind = profile.kinds[kindIndex];
      const transfer = profile.transfer_kinds.indexOf(kind) >= 0;
      const row = rows[ipu];
      const rect = element("rect", {
        x: labelWidth + start * scale,
        y: transfer ? row.y + laneHeight + 2 : row.y,
        // At least a pixel, drawn without anti-aliasing, so short tasks stay visible.
        width: Math.max(1, (end - start) * scale),
        height: transfer ? transferHeight : laneHeight,
        fill: profile.kind_colours[kind],
        class: "event " + kind.replace("+", "-"),
      }, row.group);
      const what = kind === "update" ? task + " weight update, step " + step
        : (transfer ? profile.kind_labels[kind] + " for " : "") + task + ", micro-batch " +
          microBatch + ", step " + step;
      element("title", {}, rect).textContent = what + ": " +
        formatMicroseconds((end - start) / profile.clock_hz * 1e6) + " (" +
        (end - start).toLocaleString("en-US") + " cycles)";
    }
  }

  function drawMemory() {
    const container = document.getElementById("memory");
    const legend = document.getElementById("memory-legend");
    const ipus = profile.memory.ipus;
    const categories = profile.memory.categories;
    for (const name of categories) legendItem(legend, profile.category_colours[name], name, name);

    const maxTotal = Math.max(1, ...ipus.map((ipu) => ipu.total));
    const maxLimit = Math.max(...ipus.map((ipu) => ipu.limit));
    // Draw against the limit when it is in sight; otherwise against the largest
    // total, so the categories stay readable, and say where the limit is.
    const limitInSight = maxLimit <= 2 * maxTotal;
    const axisMax = limitInSight ? maxLimit : maxTotal * 1.1;
    const labelWidth = 70;
    const width = chartWidth(container);
    const plotWidth = width - labelWidth - 160;
    const barHeight = 22;
    const rowHeight = 32;
    const height = 20 + ipus.length * rowHeight;
    const scale = plotWidth / axisMax;
    const svg = element("svg", { width: width, height: height, id: "memory-chart",
                                 viewBox: "0 0 " + width + " " + height }, container);
    ipus.forEach((ipu, index) => {
      const y = 10 + index * rowHeight;
      const bar = element("g", { class: "memory-bar", "data-ipu": ipu.ipu }, svg);
      text(bar, 4, y + barHeight / 2 + 4, "IPU " + ipu.ipu);
      let x = labelWidth;
      for (const name of categories) {
        const bytes = ipu.categories[name] || 0;
        if (bytes === 0) continue;
        const rect = element("rect", { x: x, y: y, width: Math.max(0.5, bytes * scale),
                                       height: barHeight, fill: profile.category_colours[name] },
                             bar);
        element("title", {}, rect).textContent = name + ": " + formatBytes(bytes);
        x += bytes * scale;
      }
      const share = (100 * ipu.total / ipu.limit).toFixed(1);
      text(bar, x + 6, y + barHeight / 2 + 4, formatBytes(ipu.total) + " (" + share + "% of " +
           formatBytes(ipu.limit) + ")");
      if (limitInSight) {
        const limitX = labelWidth + ipu.limit * scale;
        const limit = element("g", { class: "limit" }, bar);
        element("line", { x1: limitX, x2: limitX, y1: y - 3, y2: y + barHeight + 3 }, limit);
      }
    });
    if (!limitInSight) {
      const note = document.createElement("p");
      note.className = "note";
      note.textContent = "Bars are scaled to the largest IPU total; each IPU's limit (" +
        formatBytes(maxLimit) + ") is far beyond it.";
      container.appendChild(note);
    }
    drawMemoryTable(ipus, categories);
  }

  function drawMemoryTable(ipus, categories) {
    const table = document.getElementById("memory-table");
    const header = table.insertRow();
    for (const title of ["category", ...ipus.map((ipu) => "IPU " + ipu.ipu)]) {
      const cell = document.createElement("th");
      cell.textContent = title;
      header.appendChild(cell);
    }
    const addRow = (label, values) => {
      const row = table.insertRow();
      row.insertCell().textContent = label;
      for (const value of values) row.insertCell().textContent = formatBytes(value);
    };
    for (const name of categories) {
      const live = profile.memory.always_live[name] ? " (always live)" : "";
      addRow(name + live, ipus.map((ipu) => ipu.categories[name] || 0));
    }
    addRow("total (peak)", ipus.map((ipu) => ipu.total));
    addRow("limit", ipus.map((ipu) => ipu.limit));
  }

  drawOverview();
  drawLegend();
  drawTimeline();
  drawMemory();
  document.getElementById("summary").textContent = profile.summary;
})();
