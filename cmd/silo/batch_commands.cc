// `silo batch get`: many objects, members and samples in one request (POST /v1/batch,
// docs/shards.md "Batch GET"), written as one tar.
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "commands.h"
#include "wire/batch_json.h"

namespace silo::cli {
namespace {

namespace fs = std::filesystem;

struct BatchGetOptions {
  std::string list;    // a file of entries ("-": stdin)
  std::string output;  // the tar to write ("-": stdout)
  std::string archmode;
  bool continue_on_error = false;
};

// The entries of `text`: a JSON batch request (it starts with '{'), or one entry per line,
// "BUCKET/NAME" or "BUCKET/NAME ARCHPATH" (blank lines and lines starting with '#' skipped).
Result<wire::BatchRequest> parse_list(const std::string& text, const BatchGetOptions& o) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') {
    ASSIGN_OR_RETURN(wire::BatchRequest request, wire::parse_batch_request_json(text));
    if (o.continue_on_error) request.continue_on_error = true;
    return request;
  }
  wire::BatchRequest request;
  request.continue_on_error = o.continue_on_error;
  std::istringstream lines(text);
  std::string line;
  for (size_t number = 1; std::getline(lines, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t start = line.find_first_not_of(" \t");
    if (start == std::string::npos || line[start] == '#') continue;
    const size_t gap = line.find_first_of(" \t", start);
    const std::string address = line.substr(start, gap == std::string::npos ? std::string::npos : gap - start);
    auto parsed = parse_address(address);
    if (!parsed || parsed->name.empty()) {
      return Status::invalid_argument("{} line {}: '{}' is not BUCKET/NAME [ARCHPATH]", o.list, number, line);
    }
    wire::BatchEntry entry{.bucket = parsed->bucket, .name = parsed->name};
    if (gap != std::string::npos) {
      const size_t path_start = line.find_first_not_of(" \t", gap);
      if (path_start != std::string::npos) {
        const size_t path_end = line.find_last_not_of(" \t");
        entry.archpath = line.substr(path_start, path_end + 1 - path_start);
        if (!o.archmode.empty()) entry.archmode = o.archmode;
      }
    }
    request.entries.push_back(std::move(entry));
  }
  if (request.entries.empty()) return Status::invalid_argument("{} names no entries", o.list);
  if (request.entries.size() > wire::kMaxBatchEntries) {
    return Status::invalid_argument("{} names {} entries; one batch takes at most {}", o.list,
                                    request.entries.size(), wire::kMaxBatchEntries);
  }
  return request;
}

Status batch_get(Context& context, const BatchGetOptions& o) {
  ASSIGN_OR_RETURN(const std::string text, read_text(o.list, "the list"));
  ASSIGN_OR_RETURN(const wire::BatchRequest request, parse_list(text, o));
  ASSIGN_OR_RETURN(client::Client * c, context.client());
  uint64_t written = 0;
  const auto fetch = [&c, &request, &written](const client::SinkFn& sink) -> Status {
    ASSIGN_OR_RETURN(written, c->get_batch(request, sink));
    return Status::ok();
  };
  if (o.output == "-") {
    const Status streamed = fetch([](std::span<const char> data) -> Status {
      if (std::fwrite(data.data(), 1, data.size(), stdout) != data.size()) return Status::from_errno(errno, "stdout");
      return Status::ok();
    });
    std::fflush(stdout);
    return streamed;
  }
  // Written beside its name and renamed once whole: a cut stream leaves nothing.
  RETURN_IF_ERROR(write_whole_file(o.output, fetch));
  if (context.options.is_json) {
    std::printf("{\"entries\": %zu, \"bytes\": %llu, \"output\": %s}\n", request.entries.size(),
                static_cast<unsigned long long>(written), json_string(o.output).c_str());
  } else if (!context.options.is_quiet) {
    std::printf("%zu entries, %s written to %s\n", request.entries.size(), human_bytes(written).c_str(),
                o.output.c_str());
  }
  return Status::ok();
}

}  // namespace

Result<std::string> read_text(const std::string& path, std::string_view what) {
  std::ostringstream text;
  if (path == "-") {
    text << std::cin.rdbuf();
    return text.str();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::invalid_argument("cannot read {} {}: {}", what, path, std::strerror(errno));
  text << in.rdbuf();
  return text.str();
}

void add_batch_commands(CLI::App& app, Context& context) {
  CLI::App* batch = app.add_subcommand("batch", "Read many objects, archive members and samples in one request");
  batch->require_subcommand(1);
  auto get = std::make_shared<BatchGetOptions>();
  CLI::App* get_cmd = add_command(
      *batch, "get",
      "Write the entries of LIST as one tar, in order (members named BUCKET/NAME or BUCKET/NAME/ARCHPATH; "
      "a missing one, with --continue-on-error, an empty __404__/... member)",
      "silo batch get samples.txt out.tar      # lines: BUCKET/NAME [ARCHPATH]\n"
      "  silo batch get keys.txt - --archmode wdskey | tar -t\n"
      "  silo batch get request.json out.tar     # a POST /v1/batch body");
  get_cmd->add_option("list", get->list, "A file of entries, one per line (BUCKET/NAME [ARCHPATH]), or a JSON "
                                         "batch request; - reads stdin")
      ->required();
  get_cmd->add_option("output", get->output, "The tar to write; - writes stdout")->required();
  get_cmd->add_option("--archmode", get->archmode,
                      "Read each line's ARCHPATH as a pattern: wdskey (a WebDataset sample), regexp, prefix, "
                      "suffix, substr");
  get_cmd->add_flag("--continue-on-error", get->continue_on_error,
                    "A missing object or member becomes an empty __404__/ member instead of failing the batch");
  on_run(get_cmd, context, [&context, get] { return batch_get(context, *get); });
}

}  // namespace silo::cli
