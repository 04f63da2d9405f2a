// silo dsort: start a resharding job (POST /v1/jobs {"kind": "dsort", ...}) from a spec
// file or from arguments and flags, and follow it with --wait. The flags are encoded with
// wire::dsort_spec_json(), the codec the server decodes with.
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <vector>

#include "commands.h"
#include "wire/dsort_json.h"
#include "wire/name_template.h"

namespace silo::cli {
namespace {

constexpr const char* kJobForms =
    "give the job as --spec FILE, or as SRC_BUCKET OUT_BUCKET --template T --shard-size SIZE";

struct DsortOptions {
  std::string spec_path;  // --spec; "-": stdin
  std::string source;     // SRC_BUCKET or SRC_BUCKET/PREFIX
  std::string output;     // OUT_BUCKET
  std::string output_template;
  std::string shard_size;
  std::string prefix;
  std::string input_template;
  bool is_loose = false;
  std::string order;  // "": inferred from the other flags
  uint64_t seed = 0;
  std::string content_member;
  std::string content_type;
  std::string list_object;
  bool is_dry_run = false;
  std::string on_duplicate;
  std::string memory_limit;
  bool is_waiting = false;
  // Every argument and flag that describes the job (all but --spec and --wait).
  std::vector<CLI::Option*> job_flags;
  CLI::Option* seed_flag = nullptr;
};

// The names of the job's arguments and flags that were given ("--prefix, OUT_BUCKET").
std::string given_flags(const DsortOptions& o) {
  std::string names;
  for (const CLI::Option* flag : o.job_flags) {
    if (flag->count() == 0) continue;
    // A positional's name (SRC_BUCKET), else the flag's long name (--prefix).
    names += (names.empty() ? "" : ", ") +
             (flag->nonpositional() ? flag->get_name() : flag->get_name(true));
  }
  return names;
}

Result<std::string> read_spec(const std::string& path) {
  std::stringstream text;
  if (path == "-") {
    text << std::cin.rdbuf();
  } else {
    std::ifstream in(path, std::ios::binary);
    if (!in) return Status::invalid_argument("--spec file {} cannot be read", path);
    text << in.rdbuf();
  }
  std::string spec = text.str();
  if (spec.find_first_not_of(" \t\r\n") == std::string::npos) {
    return Status::invalid_argument(
        "--spec {} is empty (expected a JSON job: {{\"kind\": \"dsort\", ...}})",
        path == "-" ? "(stdin)" : path);
  }
  return spec;
}

Status check_template(std::string_view flag, const std::string& text) {
  auto parsed = wire::NameTemplate::parse(text);
  if (!parsed) {
    return Status::invalid_argument(
        "{} '{}' is not a brace template ({}); write e.g. 'train-{{00000..09999}}.tar'", flag, text,
        parsed.error().message());
  }
  return Status::ok();
}

// The order --order names, else the one the order's own flags imply, else random.
Result<wire::DsortOrder> order_of(const DsortOptions& o) {
  const bool is_seeded = o.seed_flag->count() > 0;
  const bool is_content = !o.content_member.empty() || !o.content_type.empty();
  const bool is_listed = !o.list_object.empty();
  std::string order = o.order;
  if (order.empty()) {
    if (is_content && is_listed) {
      return Status::invalid_argument(
          "--content-member/--content-type and --list are different orders: pick one");
    }
    order = is_content ? "content" : is_listed ? "list" : "random";
  }
  if (is_seeded && order != "random") {
    return Status::invalid_argument("--seed applies to --order random, not --order {}", order);
  }
  if (is_content && order != "content") {
    return Status::invalid_argument(
        "--content-member and --content-type apply to --order content, not --order {}", order);
  }
  if (is_listed && order != "list") {
    return Status::invalid_argument("--list applies to --order list, not --order {}", order);
  }
  if (order == "content" && o.content_member.empty()) {
    return Status::invalid_argument(
        "--order content needs --content-member: the extension of the member that holds each "
        "sample's value (cls)");
  }
  if (order == "list" && o.list_object.empty()) {
    return Status::invalid_argument(
        "--order list needs --list BUCKET/NAME: an object {{\"SHARD NAME\": [\"KEY\", ...], ...}}");
  }
  if (order == "random") return wire::DsortOrder::kRandom;
  if (order == "key") return wire::DsortOrder::kKey;
  if (order == "content") return wire::DsortOrder::kContent;
  return wire::DsortOrder::kList;
}

// The job as the flags give it, encoded by the server's codec.
Result<std::string> spec_from_flags(const DsortOptions& o) {
  if (o.source.empty() && o.output.empty() && given_flags(o).empty()) {
    return Status::invalid_argument(kJobForms);
  }
  if (o.source.empty()) {
    return Status::invalid_argument("SRC_BUCKET and OUT_BUCKET are missing: {}", kJobForms);
  }
  if (o.output.empty()) return Status::invalid_argument("OUT_BUCKET is missing: {}", kJobForms);
  if (o.output_template.empty()) {
    return Status::invalid_argument(
        "--template is missing: the output shards' names, in order (e.g. "
        "'train-{{00000..09999}}.tar')");
  }
  wire::DsortSpec spec;
  ASSIGN_OR_RETURN(const ObjectAddress source, parse_address(o.source));
  spec.input_bucket = source.bucket;
  spec.input_prefix = o.prefix;
  if (!source.name.empty()) {
    if (!o.prefix.empty() || !o.input_template.empty()) {
      return Status::invalid_argument(
          "choose one of SRC_BUCKET/PREFIX, --prefix and --input-template");
    }
    spec.input_prefix = source.name;
  }
  if (!o.prefix.empty() && !o.input_template.empty()) {
    return Status::invalid_argument(
        "choose one of --prefix and --input-template: the input is one or the other");
  }
  if (!o.input_template.empty()) {
    if (o.is_loose) {
      return Status::invalid_argument(
          "--loose input is selected by --prefix; --input-template names shards");
    }
    RETURN_IF_ERROR(check_template("--input-template", o.input_template));
    spec.input_template = o.input_template;
  }
  spec.input_loose = o.is_loose;

  ASSIGN_OR_RETURN(const ObjectAddress output, parse_address(o.output));
  if (!output.name.empty()) {
    return Status::invalid_argument(
        "OUT_BUCKET '{}' names more than a bucket: put the path in --template ('{}/{}')", o.output,
        output.name, o.output_template);
  }
  spec.output_bucket = output.bucket;
  RETURN_IF_ERROR(check_template("--template", o.output_template));
  spec.output_template = o.output_template;
  spec.output_gzip = wire::names_gzip_shards(o.output_template);  // .tgz, .tar.gz: compressed

  ASSIGN_OR_RETURN(spec.order, order_of(o));
  if (!o.shard_size.empty()) {
    auto size = parse_size(o.shard_size);
    if (!size) return Status::invalid_argument("--shard-size: {}", size.error().message());
    if (*size == 0) return Status::invalid_argument("--shard-size must be more than 0 bytes");
    spec.shard_size = *size;
  } else if (spec.order != wire::DsortOrder::kList) {
    return Status::invalid_argument(
        "--shard-size is missing: the output shards' size (e.g. 256MiB); only --order list goes "
        "without");
  }
  spec.seed = o.seed;
  spec.content_member = o.content_member;
  if (o.content_type == "float") spec.content_type = wire::DsortContentType::kFloat;
  if (o.content_type == "string") spec.content_type = wire::DsortContentType::kString;
  if (!o.list_object.empty()) {
    ASSIGN_OR_RETURN(const ObjectAddress list, parse_address(o.list_object));
    if (list.name.empty()) {
      return Status::invalid_argument("--list '{}' names no object: write BUCKET/NAME",
                                      o.list_object);
    }
    spec.list_bucket = list.bucket;
    spec.list_name = list.name;
  }
  spec.dry_run = o.is_dry_run;
  spec.fails_on_duplicate = o.on_duplicate == "fail";
  if (!o.memory_limit.empty()) {
    auto limit = parse_size(o.memory_limit);
    if (!limit) return Status::invalid_argument("--memory-limit: {}", limit.error().message());
    spec.memory_limit = *limit;
  }
  std::string body = wire::dsort_spec_json(spec);
  // What the server would refuse, refused here, before any connection.
  if (auto decoded = wire::parse_dsort_spec_json(body); !decoded) {
    return Status::invalid_argument("{}", decoded.error().message());
  }
  return body;
}

// The body of POST /v1/jobs: the --spec file as it is (the server checks it), or the flags.
Result<std::string> job_body(const DsortOptions& o) {
  if (o.spec_path.empty()) return spec_from_flags(o);
  if (const std::string given = given_flags(o); !given.empty()) {
    return Status::invalid_argument(
        "--spec gives the whole job, so {} cannot go with it: use --spec alone (with --wait), or "
        "drop --spec",
        given);
  }
  return read_spec(o.spec_path);
}

Status start_dsort(Context& context, const DsortOptions& o) {
  ASSIGN_OR_RETURN(const std::string body, job_body(o));  // argument errors before connecting
  ASSIGN_OR_RETURN(client::Client * c, context.client());
  ASSIGN_OR_RETURN(const client::JobEntry job, c->start_job(body));
  return report_started_job(context, *c, job, o.is_waiting);
}

}  // namespace

void add_dsort_commands(CLI::App& app, Context& context) {
  auto o = std::make_shared<DsortOptions>();
  CLI::App* command = add_command(
      app, "dsort",
      "Reshard a dataset (a job): read the samples of input shards or loose objects, order them "
      "(random, by key, by a member's content, by a list) and write them as new tar (or tgz) "
      "shards of a size",
      "silo dsort photos photos-out --template 'train-{00000..09999}.tar' --shard-size 256MiB "
      "--seed 7 --wait\n"
      "  silo dsort photos photos-out --input-template 'in-{000..199}.tar' --template "
      "'val-{0000..0999}.tar' \\\n"
      "      --shard-size 1GiB --order content --content-member cls --dry-run --wait\n"
      "  silo dsort raw out --prefix images/ --loose --order key --template 'k-{000..999}.tar' "
      "--shard-size 64MiB\n"
      "  silo dsort --spec job.json --wait      (the JSON job; '-' reads stdin)");
  command->add_option(
      "--spec", o->spec_path,
      "The job as JSON ({\"kind\": \"dsort\", \"input\", \"output\", \"order\", ...}), sent as "
      "is; '-' reads stdin. Excludes every other flag but --wait");
  auto& flags = o->job_flags;
  flags.push_back(
      command->add_option("SRC_BUCKET", o->source, "The input's bucket (or SRC_BUCKET/PREFIX)"));
  flags.push_back(command->add_option("OUT_BUCKET", o->output, "The output shards' bucket"));
  flags.push_back(command->add_option("--template,-t", o->output_template,
                                      "Brace template that names the output shards in order: "
                                      "'train-{00000..09999}.tar' (.tgz or .tar.gz: "
                                      "gzip-compressed)"));
  flags.push_back(command->add_option(
      "--shard-size", o->shard_size,
      "Output shard size: 256MiB, 1GiB, 500MB, bytes (needed unless --order list)"));
  flags.push_back(
      command->add_option("--prefix,-p", o->prefix, "Input: the objects whose names start so"));
  flags.push_back(
      command->add_option("--input-template", o->input_template,
                          "Input: the shards a brace template names: 'in-{000..199}.tar'"));
  flags.push_back(
      command->add_flag("--loose", o->is_loose,
                        "Input: loose objects, grouped into samples by key (dir/KEY.ext), "
                        "not shards (tar, tgz, tar.lz4, zip)"));
  flags.push_back(
      command
          ->add_option("--order", o->order,
                       "random (by --seed), key, content (--content-member), list (--list); "
                       "default random, or what --content-member or --list implies")
          ->check(CLI::IsMember({"random", "key", "content", "list"})));
  o->seed_flag = command->add_option("--seed", o->seed,
                                     "Seed of --order random (default 0: the same order each run)");
  flags.push_back(o->seed_flag);
  flags.push_back(command->add_option(
      "--content-member", o->content_member,
      "--order content: the extension of the member that holds the value (cls)"));
  flags.push_back(command
                      ->add_option("--content-type", o->content_type,
                                   "--order content: how the value compares (default int)")
                      ->check(CLI::IsMember({"int", "float", "string"})));
  flags.push_back(command->add_option(
      "--list", o->list_object,
      "--order list: BUCKET/NAME of a JSON object {\"SHARD NAME\": [\"KEY\", ...], ...}"));
  flags.push_back(command->add_flag("--dry-run", o->is_dry_run,
                                    "Plan the shards and report their figures; write nothing"));
  flags.push_back(command
                      ->add_option("--on-duplicate", o->on_duplicate,
                                   "A sample key found twice: keep both (default) or fail the job")
                      ->check(CLI::IsMember({"keep", "fail"})));
  flags.push_back(
      command->add_option("--memory-limit", o->memory_limit,
                          "Sample records each target holds in memory before spilling to disk "
                          "(512MiB; default: the server's)"));
  command->add_flag(
      "--wait", o->is_waiting,
      "Wait for the job, showing its progress, then its figures; exit 1 unless it finished");
  on_run(command, context, [&context, o] { return start_dsort(context, *o); });
}

}  // namespace silo::cli
