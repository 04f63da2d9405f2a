#include "wire/dsort_json.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <initializer_list>
#include <unordered_set>

#include "wire/detail/json_fields.h"
#include "wire/name_template.h"

namespace silo::wire {
namespace {

using nlohmann::json;

constexpr std::string_view kDocument = "a dsort job";

// A typo in a spec must not run a different job: every member must be one we know.
Status check_members(const json& object, std::string_view path, std::initializer_list<std::string_view> known) {
  for (const auto& [key, value] : object.items()) {
    bool is_known = false;
    for (std::string_view k : known) is_known = is_known || key == k;
    if (!is_known) {
      return Status::invalid_argument("{}: unknown field '{}{}' (known: {})", kDocument, path, key,
                                      fmt::join(known, ", "));
    }
  }
  return Status::ok();
}

Status check_template(std::string_view field, const std::string& text) {
  auto parsed = NameTemplate::parse(text);
  if (!parsed) return Status::invalid_argument("{}: '{}' is not a brace template: {}", kDocument, field, parsed.error().message());
  return Status::ok();
}

}  // namespace

bool names_gzip_shards(std::string_view output_template) {
  return output_template.ends_with(".tgz") || output_template.ends_with(".tar.gz");
}

std::string_view dsort_order_name(DsortOrder order) {
  switch (order) {
    case DsortOrder::kRandom: return "random";
    case DsortOrder::kKey: return "key";
    case DsortOrder::kContent: return "content";
    case DsortOrder::kList: return "list";
  }
  return "?";
}

Result<DsortSpec> parse_dsort_spec_json(std::string_view text) {
  ASSIGN_OR_RETURN(const json doc, detail::parse_object(text, kDocument));
  RETURN_IF_ERROR(check_members(doc, "", {"kind", "input", "output", "order", "dry_run", "on_duplicate", "memory_limit"}));
  const detail::JsonFields fields(doc, kDocument);
  DsortSpec spec;
  ASSIGN_OR_RETURN(const std::string kind, fields.string("kind"));
  if (kind != "dsort") return Status::invalid_argument("{}: 'kind' must be \"dsort\"", kDocument);

  ASSIGN_OR_RETURN(const detail::JsonFields input, fields.object("input"));
  RETURN_IF_ERROR(check_members(doc["input"], "input.", {"bucket", "prefix", "template", "format"}));
  ASSIGN_OR_RETURN(spec.input_bucket, input.string("bucket"));
  ASSIGN_OR_RETURN(spec.input_prefix, input.string_or("prefix", ""));
  ASSIGN_OR_RETURN(spec.input_template, input.string_or("template", ""));
  ASSIGN_OR_RETURN(const std::string input_format, input.string_or("format", "shards"));
  if (input_format != "shards" && input_format != "loose") {
    return Status::invalid_argument("{}: 'input.format' must be \"shards\" (tar, tgz, tar.lz4, zip) or \"loose\"", kDocument);
  }
  spec.input_loose = input_format == "loose";
  if (spec.input_bucket.empty()) return Status::invalid_argument("{}: 'input.bucket' is empty", kDocument);
  if (!spec.input_prefix.empty() && !spec.input_template.empty()) {
    return Status::invalid_argument("{}: give 'input.prefix' or 'input.template', not both", kDocument);
  }
  if (!spec.input_template.empty()) {
    if (spec.input_loose) {
      return Status::invalid_argument("{}: loose input is selected by 'input.prefix' (a template names shards)", kDocument);
    }
    RETURN_IF_ERROR(check_template("input.template", spec.input_template));
  }

  ASSIGN_OR_RETURN(const detail::JsonFields output, fields.object("output"));
  RETURN_IF_ERROR(check_members(doc["output"], "output.", {"bucket", "template", "shard_size", "format"}));
  ASSIGN_OR_RETURN(spec.output_bucket, output.string("bucket"));
  ASSIGN_OR_RETURN(spec.output_template, output.string("template"));
  ASSIGN_OR_RETURN(const std::string output_format, output.string_or("format", ""));
  if (spec.output_bucket.empty()) return Status::invalid_argument("{}: 'output.bucket' is empty", kDocument);
  RETURN_IF_ERROR(check_template("output.template", spec.output_template));
  // The format follows the names (the shard index goes by them): .tgz/.tar.gz is gzip.
  const bool is_named_gzip = names_gzip_shards(spec.output_template);
  if (output_format == "tgz" || output_format == "tar.gz") {
    if (!is_named_gzip) {
      return Status::invalid_argument("{}: 'output.template' must end in .tgz or .tar.gz for 'output.format' {}",
                                      kDocument, output_format);
    }
  } else if (output_format == "tar") {
    if (is_named_gzip) {
      return Status::invalid_argument("{}: 'output.template' ends in .tgz or .tar.gz, but 'output.format' is tar",
                                      kDocument);
    }
  } else if (!output_format.empty()) {
    return Status::invalid_argument("{}: 'output.format' must be \"tar\" or \"tgz\" (gzip-compressed tar)",
                                    kDocument);
  }
  spec.output_gzip = is_named_gzip;
  ASSIGN_OR_RETURN(spec.shard_size, output.u64_or("shard_size", 0));

  ASSIGN_OR_RETURN(const std::optional<detail::JsonFields> order, fields.object_or_none("order"));
  if (order) {
    RETURN_IF_ERROR(check_members(doc["order"], "order.", {"by", "seed", "member", "type", "object"}));
    ASSIGN_OR_RETURN(const std::string by, order->string("by"));
    ASSIGN_OR_RETURN(spec.seed, order->u64_or("seed", 0));
    ASSIGN_OR_RETURN(spec.content_member, order->string_or("member", ""));
    ASSIGN_OR_RETURN(const std::string type, order->string_or("type", "int"));
    ASSIGN_OR_RETURN(const std::string list_object, order->string_or("object", ""));
    if (by == "random") {
      spec.order = DsortOrder::kRandom;
    } else if (by == "key") {
      spec.order = DsortOrder::kKey;
    } else if (by == "content") {
      spec.order = DsortOrder::kContent;
      if (spec.content_member.empty() || spec.content_member.find('/') != std::string::npos) {
        return Status::invalid_argument("{}: order by content needs 'order.member', a member's extension such as \"cls\"",
                                        kDocument);
      }
      if (type == "int") {
        spec.content_type = DsortContentType::kInt;
      } else if (type == "float") {
        spec.content_type = DsortContentType::kFloat;
      } else if (type == "string") {
        spec.content_type = DsortContentType::kString;
      } else {
        return Status::invalid_argument("{}: 'order.type' must be \"int\", \"float\" or \"string\"", kDocument);
      }
    } else if (by == "list") {
      spec.order = DsortOrder::kList;
      const size_t slash = list_object.find('/');
      if (slash == std::string::npos || slash == 0 || slash + 1 == list_object.size()) {
        return Status::invalid_argument("{}: order by list needs 'order.object' as \"BUCKET/NAME\"", kDocument);
      }
      spec.list_bucket = list_object.substr(0, slash);
      spec.list_name = list_object.substr(slash + 1);
    } else {
      return Status::invalid_argument("{}: 'order.by' must be \"random\", \"key\", \"content\" or \"list\"", kDocument);
    }
  }
  if (spec.order != DsortOrder::kList && spec.shard_size == 0) {
    return Status::invalid_argument("{}: 'output.shard_size' (bytes, > 0) is needed unless the order is a list",
                                    kDocument);
  }
  ASSIGN_OR_RETURN(spec.dry_run, fields.bool_or("dry_run", false));
  ASSIGN_OR_RETURN(const std::string on_duplicate, fields.string_or("on_duplicate", "keep"));
  if (on_duplicate != "keep" && on_duplicate != "fail") {
    return Status::invalid_argument("{}: 'on_duplicate' must be \"keep\" or \"fail\"", kDocument);
  }
  spec.fails_on_duplicate = on_duplicate == "fail";
  ASSIGN_OR_RETURN(spec.memory_limit, fields.u64_or("memory_limit", 0));
  return spec;
}

Result<std::vector<DsortListShard>> parse_dsort_list_json(std::string_view text) {
  constexpr std::string_view kList = "a dsort key list";
  const auto doc = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return Status::invalid_argument("{} must be a JSON object {{\"SHARD NAME\": [\"KEY\", ...], ...}}", kList);
  }
  std::vector<DsortListShard> shards;
  std::unordered_set<std::string> names;
  std::unordered_set<std::string> keys;
  for (const auto& [name, value] : doc.items()) {
    if (name.empty() || !names.insert(name).second) {
      return Status::invalid_argument("{}: shard name '{}' is empty or given twice", kList, name);
    }
    if (!value.is_array()) return Status::invalid_argument("{}: '{}' must map to an array of keys", kList, name);
    DsortListShard& shard = shards.emplace_back();
    shard.name = name;
    for (const auto& key : value) {
      if (!key.is_string()) return Status::invalid_argument("{}: '{}' lists a key that is not a string", kList, name);
      if (!keys.insert(key.get<std::string>()).second) {
        return Status::invalid_argument("{}: key '{}' is listed twice", kList, key.get<std::string>());
      }
      shard.keys.push_back(key.get<std::string>());
    }
  }
  if (shards.empty()) return Status::invalid_argument("{} names no shards", kList);
  return shards;
}

std::string dsort_spec_json(const DsortSpec& spec) {
  json input{{"bucket", spec.input_bucket}, {"format", spec.input_loose ? "loose" : "shards"}};
  if (!spec.input_prefix.empty()) input["prefix"] = spec.input_prefix;
  if (!spec.input_template.empty()) input["template"] = spec.input_template;
  json output{{"bucket", spec.output_bucket}, {"template", spec.output_template},
              {"format", spec.output_gzip ? "tgz" : "tar"}};
  if (spec.shard_size > 0) output["shard_size"] = spec.shard_size;
  json order{{"by", std::string(dsort_order_name(spec.order))}};
  switch (spec.order) {
    case DsortOrder::kRandom: order["seed"] = spec.seed; break;
    case DsortOrder::kKey: break;
    case DsortOrder::kContent:
      order["member"] = spec.content_member;
      order["type"] = spec.content_type == DsortContentType::kInt     ? "int"
                      : spec.content_type == DsortContentType::kFloat ? "float"
                                                                      : "string";
      break;
    case DsortOrder::kList: order["object"] = spec.list_object(); break;
  }
  json doc{{"kind", "dsort"},       {"input", std::move(input)},
           {"output", std::move(output)}, {"order", std::move(order)},
           {"dry_run", spec.dry_run}, {"on_duplicate", spec.fails_on_duplicate ? "fail" : "keep"}};
  if (spec.memory_limit > 0) doc["memory_limit"] = spec.memory_limit;
  return doc.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace silo::wire
