// report.html: the study's summary, charts (Vega-Lite, rendered by vega-embed) and tables in one
// self-contained file. The charting library is inlined from the npm packages that
// scripts/install-web-deps.sh installs (web/package-lock.json pins them): vega, vega-lite and
// vega-embed's build/*.min.js, read from $BATCHLAB_WEB_MODULES, else from the source tree's
// web/node_modules (the path is compiled in). So the file opens offline, from disk or e-mail.
//
// The same page is what `batchlab ui` serves, with `live` set: it then polls a JSON progress
// endpoint, shows every run's step, loss, last evaluation and ETA, and reloads its sections
// when runs land (the endpoint's fingerprint changes).
//
//   HtmlOptions live;
//   live.progress_url = "/api/sweeps/quickstart/progress";
//   live.fingerprint = progress.fingerprint;
//   std::string page = RenderHtml(study, live);
#ifndef BATCHLAB_ANALYSIS_REPORT_REPORT_HTML_H_
#define BATCHLAB_ANALYSIS_REPORT_REPORT_HTML_H_

#include <string>
#include <vector>

#include "base/status.h"

namespace batchlab::analysis {

struct HtmlOptions {
  std::string progress_url;  // non-empty: the live page, polling this URL every 2 s
  std::string fingerprint;   // the progress fingerprint the page was rendered at
};

// The node_modules folder the charting library is read from: $BATCHLAB_WEB_MODULES, else an
// installed tree's <prefix>/share/batchlab/web/node_modules (next to <prefix>/bin/batchlab), else
// the source tree's web/node_modules.
std::string ChartLibraryDir();

// The three <script> elements of the charting library (cached after the first read).
// FailedPrecondition naming the folder searched and the fix when a file is missing.
StatusOr<std::string> ChartLibraryScripts();

}  // namespace batchlab::analysis

#endif  // BATCHLAB_ANALYSIS_REPORT_REPORT_HTML_H_
