# -*- coding: utf-8 -*-
# Copyright: rdmaops.roce contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The validate report's picture: ``fabric.svg``, the fabric at a glance.

Three panels of plain SVG (no library: the controller needs nothing more than Python): ib_write_bw per
tested pair against the bandwidth threshold fabric_check used (``min_gbps``, a fraction of the slower
end's link rate), ib_write_lat per pair, and the failed checks per host. A bar is green when it passed
and red when it failed; a pair without a result is named, with no bar. ``report.md`` shows it under
its summary line.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

FILE_NAME = "fabric.svg"
WIDTH = 760
LABEL_W = 230
BAR_W = WIDTH - LABEL_W - 110
ROW_H = 22
GREEN, RED, GREY, INK = "#2e7d32", "#c62828", "#9e9e9e", "#212121"


def _esc(text):
    return ("%s" % (text,)).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _num(value):
    return ("%.3f" % value).rstrip("0").rstrip(".") if isinstance(value, float) else "%s" % (value,)


def _pair(item):
    return "%s -> %s" % (item.get("host"), item.get("peer")) if item.get("peer") else "%s" % item.get("host")


def _panel(title, rows, unit, top, threshold_key=None):
    """``rows``: (label, value or None, passed, threshold or None, text shown without a value).
    Returns (svg lines, height)."""
    out = ['<text x="10" y="%d" font-size="15" font-weight="bold" fill="%s">%s</text>' % (top + 18, INK, _esc(title))]
    if not rows:
        out.append('<text x="20" y="%d" font-size="12" fill="%s">nothing measured</text>' % (top + 40, GREY))
        return out, 52
    scale = max([row[1] for row in rows if row[1]] + [row[3] for row in rows if row[3]] + [1e-9])
    y = top + 30
    for label, value, passed, threshold, empty in rows:
        out.append('<text x="%d" y="%d" font-size="12" text-anchor="end" fill="%s">%s</text>' % (LABEL_W - 8, y + 15, INK, _esc(label)))
        if value is None:
            colour = RED if passed is False else GREEN
            out.append('<text x="%d" y="%d" font-size="12" fill="%s">%s</text>' % (LABEL_W, y + 15, colour, _esc(empty)))
        else:
            width = max(1, int(round(BAR_W * value / scale)))
            colour = GREEN if passed is not False else RED
            out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="%s"><title>%s: %s %s</title></rect>' % (
                LABEL_W, y + 3, width, ROW_H - 6, colour, _esc(label), _num(value), _esc(unit)))
            out.append('<text x="%d" y="%d" font-size="12" fill="%s">%s %s</text>' % (LABEL_W + width + 6, y + 15, INK, _num(value), _esc(unit)))
        if threshold:
            x = LABEL_W + int(round(BAR_W * threshold / scale))
            out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2" stroke-dasharray="4,2">'
                       '<title>threshold %s %s</title></line>' % (x, y, x, y + ROW_H, INK, _num(threshold), _esc(unit)))
        y += ROW_H
    if threshold_key:
        out.append('<text x="%d" y="%d" font-size="11" fill="%s">dashed line: %s</text>' % (LABEL_W, y + 14, GREY, _esc(threshold_key)))
        y += 18
    return out, y - top + 8


def render(report):
    """The SVG text for a fabric_check report (``findings``, ``measurements``, ``passed``)."""
    findings = report.get("findings") or []
    measurements = report.get("measurements") or []
    bw_findings = dict(((f.get("host"), f.get("peer")), f) for f in findings if f.get("check") == "rdma_bw")
    bw_rows = []
    for m in [m for m in measurements if m.get("kind") == "ib_write_bw"]:
        found = bw_findings.pop((m.get("host"), m.get("peer")), {})
        bw_rows.append((_pair(m), m.get("value"), found.get("passed"), (m.get("detail") or {}).get("min_gbps"), ""))
    for (host, peer), found in sorted(bw_findings.items(), key=lambda item: ("%s" % (item[0],))):
        if found.get("passed") is False:  # a run that gave no result: named, no bar
            bw_rows.append((_pair(found), None, False, None, "no result: %s" % found.get("actual")))
    lat_rows = [(_pair(m), m.get("value"), True, None, "") for m in measurements if m.get("kind") == "ib_write_lat"]
    failed = {}
    for f in findings:
        if f.get("passed") is False:
            failed.setdefault(f.get("host"), []).append(f.get("check"))
    hosts = sorted(set(f.get("host") for f in findings if f.get("host") and f.get("check") not in ("switch",)) | set(failed))
    fail_rows = [("%s (%s)" % (host, ", ".join(sorted(set(failed[host])))) if host in failed else "%s" % host,
                  len(failed.get(host, [])) or None, False if host in failed else True, None, "none failed") for host in hosts]
    parts = []
    top = 34
    for title, rows, unit, key in (
            ("RDMA bandwidth per pair (ib_write_bw)", bw_rows, "Gb/s", "the least bandwidth that passes (min_bw_fraction of the link rate)"),
            ("RDMA latency per pair (ib_write_lat, typical)", lat_rows, "usec", None),
            ("Failed checks per host", fail_rows, "failed", None)):
        lines, height = _panel(title, rows, unit, top, key if any(r[3] for r in rows) else None)
        parts.extend(lines)
        top += height
    body = "\n".join(parts)
    verdict = "PASSED" if report.get("passed") else "FAILED"
    head = ('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif">\n'
            '<rect width="100%%" height="100%%" fill="#ffffff"/>\n'
            '<text x="10" y="22" font-size="17" font-weight="bold" fill="%s">Fabric validation: %s</text>\n' % (
                WIDTH, top + 10, WIDTH, top + 10, GREEN if report.get("passed") else RED, verdict))
    return head + body + "\n</svg>\n"


def with_picture(run_dir, report, markdown, write):
    """Write ``fabric.svg`` into ``run_dir`` with ``write(path, text)`` and return ``markdown`` showing it
    under its summary line (the one starting with "Generated")."""
    write(os.path.join(run_dir, FILE_NAME), render(report))
    lines = markdown.split("\n")
    at = next((i + 1 for i, line in enumerate(lines) if line.startswith("Generated ")), 1)
    picture = ["", "![The fabric at a glance: bandwidth and latency per tested pair against the threshold, failed checks "
                   "per host](%s)" % FILE_NAME]
    return "\n".join(lines[:at] + picture + lines[at:])
