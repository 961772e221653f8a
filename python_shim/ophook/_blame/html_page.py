"""`ophook blame --html FILE`: the verdict and the tables of the terminal report as one HTML page
(no script, nothing fetched), each row's share of the final error drawn as a bar."""
import html

from .report import tables, verdict

_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; overflow-wrap: anywhere; }
h1 { font-size: 1.3em; } h2 { font-size: 1.1em; margin-top: 1.5em; }
p.verdict { margin: 0.2em 0; } p.verdict:last-of-type { font-weight: 600; }
table { border-collapse: collapse; } th, td { padding: 2px 10px; text-align: left; vertical-align: top; }
th { border-bottom: 1px solid #999; } tr:nth-child(even) td { background: #f4f4f4; }
td.share { min-width: 9em; white-space: nowrap; } .bar { display: inline-block; height: 0.8em; background: #c0392b; margin-right: 6px; }
"""


def _cells(row, share):
    bar = '<span class="bar" style="width:%.1fpx"></span>' % (80 * min(max(share, 0.0), 1.0)) if share else ""
    first = '<td class="share">%s%s</td>' % (bar, html.escape(row[0]))
    return first + "".join("<td>%s</td>" % html.escape(cell) for cell in row[1:])


def write_html(path, blame, by, top):
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             "<title>ophook blame: %s</title><style>%s</style></head><body>" % (html.escape(blame["run"]), _STYLE),
             "<h1>ophook blame of %s</h1>" % html.escape(blame["run"])]
    parts += ['<p class="verdict">%s</p>' % html.escape(line) for line in verdict(blame, by)]
    for title, header, rows, shares in tables(blame, by, top):
        if not rows:
            continue
        parts.append("<h2>%s</h2><table><thead><tr>%s</tr></thead><tbody>" % (
            html.escape(title), "".join("<th>%s</th>" % html.escape(h) for h in header)))
        parts += ["<tr>%s</tr>" % _cells(row, share) for row, share in zip(rows, shares)]
        parts.append("</tbody></table>")
    parts.append("</body></html>\n")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(parts))
