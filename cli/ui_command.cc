// `batchlab ui`: the report of each sweep as a live web page, from a read-only database.
//
//   batchlab ui                              # http://127.0.0.1:8765/ lists the sweeps
//   batchlab ui --host 0.0.0.0 --port 9000   # reachable from other machines (no authentication!)
//
// Routes (cpp-httplib, Debian's libcpp-httplib-dev):
//   GET /                               the sweeps in the database, with links
//   GET /sweeps/NAME                    the report page (report_html.h) in live mode
//   GET /api/sweeps                     [{"name", "version", "runs"}]
//   GET /api/sweeps/NAME/progress       orchestrator::LiveProgressJson: per-run step, loss, last
//                                       eval, ETA, and the fingerprint the page polls every 2 s
// Every request opens its own read-only connection (results::OpenReadOnly), so the server never
// blocks a running sweep and can change nothing. The page is recomputed only when the sweep's
// fingerprint moved (a run landed, metrics arrived) and at most every --min-refresh seconds.
#include <sys/socket.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include <fmt/core.h>
#include <httplib.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "analysis/report/report.h"
#include "analysis/data/sweep_data.h"
#include "analysis/data/table.h"
#include "cli/commands.h"
#include "cli/shared_flags.h"
#include "cli/live_status.h"
#include "orchestrator/execute/live_progress.h"
#include "orchestrator/process/signal_watcher.h"
#include "results/run_query.h"
#include "results/schema.h"

namespace batchlab::cli {

namespace {

namespace orch = batchlab::orchestrator;
using json = nlohmann::json;

struct UiFlags {
  std::string host = "127.0.0.1";
  int port = 8765;
  double min_refresh = 5;  // seconds between recomputations of one sweep's page
  analysis::StudyOptions study;
};

// The last page rendered per sweep, reused while its fingerprint holds.
class PageCache {
 public:
  struct Page {
    std::string fingerprint;
    std::string html;
    std::chrono::steady_clock::time_point made;
  };
  std::optional<Page> Get(const std::string& sweep) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pages_.find(sweep);
    if (it == pages_.end()) return std::nullopt;
    return it->second;
  }
  void Put(const std::string& sweep, Page page) {
    std::lock_guard<std::mutex> lock(mu_);
    pages_[sweep] = std::move(page);
  }

 private:
  std::mutex mu_;
  std::map<std::string, Page> pages_;
};

StatusOr<std::string> RenderSweepPage(const UiFlags& f, const std::string& db_path,
                                      const std::string& sweep, PageCache& cache) {
  BATCHLAB_ASSIGN_OR_RETURN(orch::LiveProgress live, ReadLiveProgress(db_path, sweep));
  const auto now = std::chrono::steady_clock::now();
  std::optional<PageCache::Page> cached = cache.Get(sweep);
  if (cached && (cached->fingerprint == live.fingerprint ||
                 now - cached->made < std::chrono::duration<double>(f.min_refresh))) {
    return cached->html;
  }
  analysis::LoadOptions load;
  BATCHLAB_ASSIGN_OR_RETURN(analysis::SweepData data, analysis::LoadSweep(db_path, sweep, load));
  BATCHLAB_ASSIGN_OR_RETURN(analysis::Study study, analysis::RunStudy(data, f.study));
  analysis::HtmlOptions html;
  html.progress_url = "/api/sweeps/" + sweep + "/progress";
  html.fingerprint = live.fingerprint;
  PageCache::Page page{live.fingerprint, analysis::RenderHtml(study, html), now};
  cache.Put(sweep, page);
  return page.html;
}

StatusOr<json> ListSweeps(const std::string& db_path) {
  BATCHLAB_ASSIGN_OR_RETURN(auto db, results::OpenReadOnly(db_path));
  BATCHLAB_ASSIGN_OR_RETURN(std::vector<results::LatestSweep> sweeps,
                            results::ListLatestSweeps(*db));
  json out = json::array();
  for (const results::LatestSweep& s : sweeps) {
    out.push_back({{"name", s.name}, {"version", s.version}, {"runs", s.runs}});
  }
  return out;
}

int HttpCode(const Status& s) {
  switch (s.code()) {
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kInvalidArgument:
      return 400;
    default:
      return 500;
  }
}

void Fail(httplib::Response& res, const Status& s) {
  res.status = HttpCode(s);
  res.set_content(s.message() + "\n", "text/plain; charset=utf-8");
}

Status Serve(const UiFlags& f, CliContext& ctx) {
  const std::string& db_path = ctx.db_path;
  if (!f.study.target.empty()) {
    BATCHLAB_RETURN_IF_ERROR(
        analysis::ParseTarget(f.study.target).status().WithContext("--target"));
  }
  BATCHLAB_RETURN_IF_ERROR(results::OpenReadOnly(db_path).status());  // fail fast on a bad --db
  if (!analysis::ChartLibraryScripts().ok()) {
    fmt::print(stderr, "batchlab ui: warning: {}\n",
               analysis::ChartLibraryScripts().status().message());
  }
  auto cache = std::make_shared<PageCache>();
  httplib::Server server;
  server.Get("/", [&](const httplib::Request&, httplib::Response& res) {
    StatusOr<json> sweeps = ListSweeps(db_path);
    if (!sweeps.ok()) return Fail(res, sweeps.status());
    std::string html = fmt::format(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>batchlab ui</title>"
        "</head><body style=\"font-family:system-ui,sans-serif;margin:2em\"><h1>batchlab: {}</h1>"
        "<ul>",
        analysis::HtmlEscape(db_path));
    for (const json& s : *sweeps) {
      const std::string name = s["name"].get<std::string>();
      html += fmt::format("<li><a href=\"/sweeps/{0}\">{1}</a> (version {2}, {3} runs)</li>",
                          analysis::HtmlEscape(name), analysis::HtmlEscape(name),
                          s["version"].get<int>(), s["runs"].get<int>());
    }
    if (sweeps->empty())
      html += "<li>no sweeps yet: start one with <code>batchlab sweep run</code></li>";
    res.set_content(html + "</ul></body></html>\n", "text/html; charset=utf-8");
  });
  server.Get("/api/sweeps", [&](const httplib::Request&, httplib::Response& res) {
    StatusOr<json> sweeps = ListSweeps(db_path);
    if (!sweeps.ok()) return Fail(res, sweeps.status());
    res.set_content(sweeps->dump(), "application/json");
  });
  server.Get(R"(/api/sweeps/([^/]+)/progress)",
             [&](const httplib::Request& req, httplib::Response& res) {
               StatusOr<orch::LiveProgress> live = ReadLiveProgress(db_path, req.matches[1]);
               if (!live.ok()) return Fail(res, live.status());
               res.set_header("Cache-Control", "no-store");
               res.set_content(orch::LiveProgressJson(*live).dump(), "application/json");
             });
  server.Get(R"(/sweeps/([^/]+))", [&, cache](const httplib::Request& req, httplib::Response& res) {
    StatusOr<std::string> page = RenderSweepPage(f, db_path, req.matches[1], *cache);
    if (!page.ok()) return Fail(res, page.status());
    res.set_header("Cache-Control", "no-store");
    res.set_content(*page, "text/html; charset=utf-8");
  });

  // cpp-httplib's default socket options add SO_REUSEPORT, which lets a second server bind a
  // port in use and take half its requests: only SO_REUSEADDR (a restart may reuse a port in
  // TIME_WAIT), so a port another server holds is refused.
  server.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  int port = f.port;
  if (port == 0) {
    port = server.bind_to_any_port(f.host);
  } else if (!server.bind_to_port(f.host, port)) {
    port = -1;
  }
  if (port <= 0) {
    return InvalidArgumentError(fmt::format(
        "--port {}: cannot listen on {}:{} (the port is in use, or {} is not an address of this "
        "machine); pick another --port, or --port 0 for any free one",
        f.port, f.host, f.port, f.host));
  }
  fmt::print("batchlab ui: serving {} read-only at http://{}:{}/ (Ctrl-C stops)\n", db_path, f.host,
             port);
  std::fflush(stdout);
  orch::SignalWatcher signals;
  std::thread stopper([&] {
    while (server.is_running() || !signals.requested()) {
      if (signals.requested()) {
        server.stop();
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  server.listen_after_bind();
  if (!signals.requested()) server.stop();
  stopper.join();
  // Ctrl-C is how a user stops the server: exit 128 + signal, without an error message.
  if (signals.requested()) ctx.stopped_by_signal = signals.signal_number();
  return OkStatus();
}

}  // namespace

void AddUiCommand(CLI::App& app, CliContext& ctx) {
  auto* ui = app.add_subcommand(
      "ui", "Serve the live report of every sweep over HTTP (read-only; 127.0.0.1 by default)");
  AddVersionFlag(*ui);
  auto flags = std::make_shared<UiFlags>();
  ui->add_option("--host", flags->host, "Address to listen on (0.0.0.0: every interface)")
      ->capture_default_str();
  ui->add_option("--port", flags->port, "TCP port (0: any free port, printed on start)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  ui->add_option("--min-refresh", flags->min_refresh,
                 "Seconds between recomputations of a sweep's page while it changes")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  AddStudyFlags(*ui, flags->study, kAllStudyFlags);
  ui->callback([flags, &ctx] { ctx.status = Serve(*flags, ctx); });
}

}  // namespace batchlab::cli
