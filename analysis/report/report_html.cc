// report.html and the live page of `batchlab ui` (see report_html.h).
#include "analysis/report/report_html.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include <fmt/core.h>

#include "analysis/report/report.h"
#include "analysis/report/report_charts.h"
#include "analysis/data/table.h"
#include "base/self_executable.h"

#ifndef BATCHLAB_WEB_MODULES
#define BATCHLAB_WEB_MODULES "web/node_modules"
#endif

namespace batchlab::analysis {

namespace {

constexpr const char* kLibraryFiles[] = {"vega/build/vega.min.js",
                                         "vega-lite/build/vega-lite.min.js",
                                         "vega-embed/build/vega-embed.min.js"};

constexpr const char* kStyle = R"css(
body{font-family:system-ui,sans-serif;max-width:1150px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;font-size:12px;margin:.5em 0}
td,th{border:1px solid #ccc;padding:2px 6px;text-align:left;white-space:nowrap}th{background:#f3f3f3}
div.table{overflow-x:auto}div.x-axis{font-size:13px;margin:0 0 .2em .5em}
td.num{text-align:right;font-variant-numeric:tabular-nums}
p{font-size:13px}figure.chart{margin:1.5em 0}figure.chart figcaption{font-size:14px;margin:.3em 0 0 .5em;max-width:900px}
.notice{background:#fff4e5;border:1px solid #f0b46b;padding:.5em 1em}
#live{background:#f6f9ff;border:1px solid #c8d6f0;padding:.2em 1em 1em}
#live .ago{color:#666;font-size:12px}
)css";

// Renders every chart (the data in #batchlab-charts), then flags the body so tests and the
// live page know rendering finished. Views are kept in window.batchlabViews[id]. A chart whose
// spec lists `usermeta.x_axes` (per-run curves: samples or tokens seen, or step) gets a toggle
// above it that swaps `encoding.x` and redraws it; the choice outlives the live page's reloads
// (window.batchlabAxes[id]) and the figure's data-x-axis names the axis drawn.
constexpr const char* kRenderScript = R"js(
window.batchlabViews = {};
window.batchlabAxes = {};
async function batchlabEmbed(c) {
  const fig = document.getElementById('chart-' + c.id);
  const el = fig && fig.querySelector('.vis');
  if (!el || typeof vegaEmbed === 'undefined') return;
  const spec = c.spec;
  const axes = spec.usermeta && spec.usermeta.x_axes;
  if (axes) {
    const chosen = axes.find((a) => a.name === window.batchlabAxes[c.id]) || axes[0];
    let bar = fig.querySelector('.x-axis');
    if (!bar) {
      bar = document.createElement('div');
      bar.className = 'x-axis';
      bar.append('x axis: ');
      for (const a of axes) {
        const label = document.createElement('label');
        const input = document.createElement('input');
        input.type = 'radio';
        input.name = 'x-axis-' + c.id;
        input.value = a.name;
        input.addEventListener('change', () => {
          window.batchlabAxes[c.id] = a.name;
          batchlabEmbed(c);
        });
        label.append(input, ' ' + a.name);
        bar.append(label, ' ');
      }
      fig.insertBefore(bar, el);
    }
    for (const input of bar.querySelectorAll('input')) input.checked = input.value === chosen.name;
    spec.encoding.x = chosen.x;
    fig.dataset.xAxis = '';
    if (window.batchlabViews[c.id]) window.batchlabViews[c.id].finalize();
    const r = await vegaEmbed(el, spec, {renderer: 'svg', actions: false, mode: 'vega-lite'});
    window.batchlabViews[c.id] = r.view;
    fig.dataset.xAxis = chosen.name;
    return;
  }
  if (window.batchlabViews[c.id]) window.batchlabViews[c.id].finalize();
  const r = await vegaEmbed(el, spec, {renderer: 'svg', actions: false, mode: 'vega-lite'});
  window.batchlabViews[c.id] = r.view;
}
window.batchlabRender = async function () {
  const data = document.getElementById('batchlab-charts');
  const charts = data ? JSON.parse(data.textContent) : [];
  document.body.dataset.charts = 'rendering';
  for (const c of charts) await batchlabEmbed(c);
  document.body.dataset.charts = 'rendered';
  document.body.dataset.chartCount = String(charts.length);
};
window.batchlabRendered = window.batchlabRender();
)js";

// The live page: polls the progress endpoint, redraws the per-run table, and when the fingerprint
// moves (a run landed, metrics arrived) fetches the page again and swaps in its report section.
constexpr const char* kLiveScript = R"js(
(function () {
  const live = document.getElementById('live');
  const url = live.dataset.progressUrl;
  let fingerprint = live.dataset.fingerprint;
  let busy = false;
  const fmt = (v, d) => (v === null || v === undefined) ? '' :
      (typeof v === 'number' ? Number(v.toPrecision(d || 4)).toString() : String(v));
  const dur = (s) => (s === null || s === undefined) ? '' :
      (s >= 3600 ? Math.floor(s / 3600) + 'h' + String(Math.floor(s % 3600 / 60)).padStart(2, '0') :
       Math.floor(s / 60) + ':' + String(Math.floor(s % 60)).padStart(2, '0'));
  function draw(p) {
    const counts = Object.entries(p.counts).map(([k, v]) => v + ' ' + k).join(', ');
    live.querySelector('.counts').textContent =
        p.total + ' runs: ' + (counts || 'none') + (p.eta_seconds !== null ? ' | sweep ETA ' + dur(p.eta_seconds) : '');
    const body = live.querySelector('tbody');
    body.textContent = '';
    for (const r of p.runs) {
      const tr = document.createElement('tr');
      const ev = r.last_eval ? Object.entries(r.last_eval.values).map(([k, v]) => k + '=' + fmt(v)).join(' ') +
          ' @' + r.last_eval.step : '';
      for (const [v, num] of [[r.id, false], [r.label, false], [r.state, false],
                              [r.step !== null ? (r.total_steps ? r.step + '/' + r.total_steps : r.step) : '', true],
                              [fmt(r.loss), true], [ev, false], [dur(r.elapsed_seconds), true],
                              [dur(r.eta_seconds), true]]) {
        const td = document.createElement('td');
        td.textContent = v;
        if (num) td.className = 'num';
        tr.appendChild(td);
      }
      body.appendChild(tr);
    }
    live.querySelector('.ago').textContent = 'updated ' + new Date().toLocaleTimeString();
  }
  async function reloadReport() {
    const html = await (await fetch(window.location.href, {cache: 'no-store'})).text();
    const doc = new DOMParser().parseFromString(html, 'text/html');
    document.getElementById('report').replaceWith(doc.getElementById('report'));
    await window.batchlabRender();
  }
  async function poll() {
    if (busy) return;
    busy = true;
    try {
      const p = await (await fetch(url, {cache: 'no-store'})).json();
      draw(p);
      if (p.fingerprint !== fingerprint) {
        fingerprint = p.fingerprint;
        await reloadReport();
        document.body.dataset.reloads = String(Number(document.body.dataset.reloads || 0) + 1);
      }
      document.body.dataset.polls = String(Number(document.body.dataset.polls || 0) + 1);
    } catch (e) {
      live.querySelector('.ago').textContent = 'server not reachable (' + e.message + '); retrying';
    } finally {
      busy = false;
    }
  }
  poll();
  setInterval(poll, 2000);
})();
)js";

std::string ReadFile(const std::string& path, bool* ok) {
  std::ifstream in(path, std::ios::binary);
  *ok = static_cast<bool>(in);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// JSON inside <script type="application/json">: "</" must not close the element.
std::string ScriptSafe(std::string text) {
  for (size_t i = 0; (i = text.find("</", i)) != std::string::npos; i += 3)
    text.replace(i, 2, "<\\/");
  return text;
}

}  // namespace

std::string ChartLibraryDir() {
  const char* env = std::getenv("BATCHLAB_WEB_MODULES");
  if (env != nullptr && *env != '\0') return env;
  // An installed tree (cmake --install, the .deb): <prefix>/bin/batchlab reads
  // <prefix>/share/batchlab/web/node_modules. A build tree has no such folder and reads the source
  // tree's web/node_modules, whose path the build compiled in.
  std::error_code ec;
  const std::filesystem::path self = SelfExecutable();
  if (!self.empty()) {
    const std::filesystem::path installed =
        self.parent_path().parent_path() / "share" / "batchlab" / "web" / "node_modules";
    if (std::filesystem::is_directory(installed, ec)) return installed.string();
  }
  return BATCHLAB_WEB_MODULES;
}

StatusOr<std::string> ChartLibraryScripts() {
  static std::mutex mu;
  static std::string cached_dir, cached;
  std::lock_guard<std::mutex> lock(mu);
  const std::string dir = ChartLibraryDir();
  if (!cached.empty() && cached_dir == dir) return cached;
  std::string out;
  for (const char* file : kLibraryFiles) {
    bool ok = false;
    const std::string path = dir + "/" + file;
    std::string js = ReadFile(path, &ok);
    if (!ok || js.empty()) {
      return FailedPreconditionError(fmt::format(
          "the report's charting library is not installed ({} is missing): run `bash "
          "scripts/install-web-deps.sh`, or point BATCHLAB_WEB_MODULES at a node_modules folder "
          "holding vega, vega-lite and vega-embed",
          path));
    }
    out += fmt::format("<script>/* {} (npm; web/package-lock.json) */\n{}\n</script>\n", file, js);
  }
  cached_dir = dir;
  cached = out;
  return out;
}

std::string RenderHtml(const Study& s, const HtmlOptions& options) {
  const bool live = !options.progress_url.empty();
  std::string h = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<title>batchlab {}: {}</title>\n<style>{}</style></head><body>\n"
      "<h1>batchlab report: sweep {} (version {})</h1>\n",
      live ? "live" : "report", HtmlEscape(s.sweep), kStyle, HtmlEscape(s.sweep), s.version);
  if (live) {
    h += fmt::format(
        "<section id=\"live\" data-progress-url=\"{}\" data-fingerprint=\"{}\">\n<h2>Live</h2>\n"
        "<p class=\"counts\"></p>\n<table><thead><tr><th>run</th><th>config</th><th>state</th>"
        "<th>step</th><th>loss</th><th>last eval</th><th>elapsed</th><th>ETA</th></tr></thead>"
        "<tbody></tbody></table>\n<p class=\"ago\"></p>\n</section>\n",
        HtmlEscape(options.progress_url), HtmlEscape(options.fingerprint));
  }
  h += "<div id=\"report\">\n<h2>Summary</h2>\n<ul>\n";
  for (const std::string& line : Summary(s)) h += "<li>" + HtmlEscape(line) + "</li>\n";
  h += "</ul>\n";
  if (!s.recommendation.measured.empty()) {
    h += fmt::format("<h2>Recommendation (prefer {})</h2>\n<div class=\"recommendation\">\n",
                     PreferenceName(s.recommendation.prefer));
    for (const std::string& line : RecommendationLines(s.recommendation)) {
      h += "<p>" + HtmlEscape(line) + "</p>\n";
    }
    h += "</div>\n";
  }
  h += "<p>Methods, formulas and their sources: docs/methods.md. Projections are a model, "
       "not measurements. Charts: hover a mark for its run and configuration; click a legend "
       "entry to show only its series (shift-click adds more, click the background to reset).</p>\n"
       "<h2>Charts</h2>\n";
  const std::vector<Chart> charts = StudyCharts(s);
  StatusOr<std::string> library = ChartLibraryScripts();
  if (!library.ok()) {
    h += "<p class=\"notice\">Charts not drawn: " + HtmlEscape(library.status().message()) +
         "</p>\n";
  }
  nlohmann::json data = nlohmann::json::array();
  for (const Chart& c : charts) {
    h += fmt::format(
        "<figure class=\"chart\" id=\"chart-{}\"><div class=\"vis\"></div><figcaption>{}"
        "</figcaption></figure>\n",
        c.id, HtmlEscape(c.reading));
    data.push_back({{"id", c.id}, {"spec", c.spec}});
  }
  h += "<script type=\"application/json\" id=\"batchlab-charts\">" + ScriptSafe(data.dump()) +
       "</script>\n<h2>Results</h2>\n";
  for (const Table& t : StudyTables(s)) h += t.ToHtml();
  h += "</div>\n";
  if (library.ok()) h += *library;
  h += std::string("<script>") + kRenderScript + "</script>\n";
  if (live) h += std::string("<script>") + kLiveScript + "</script>\n";
  return h + "</body></html>\n";
}

}  // namespace batchlab::analysis
