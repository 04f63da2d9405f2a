// libFuzzer target for bucket policies and the native API's JSON documents (tools/fuzz.sh
// builds and runs it with ASan and UBSan). The first byte picks the parser: a policy is
// parsed, validated and, when valid, evaluated for a few requests; the others are the
// documents clients send (batch GET, bucket properties, jobs, dsort specs, users, evict
// lists) and brace templates. Whatever the bytes: no crash, no hang, no sanitizer report.
#include <cstdint>
#include <string_view>

#include "access/policy.h"
#include "wire/batch_json.h"
#include "wire/codec.h"
#include "wire/dsort_json.h"
#include "wire/json.h"
#include "wire/name_template.h"
#include "wire/policy_json.h"

namespace {

void policy(std::string_view text) {
  const auto parsed = silo::wire::parse_policy_json(text);
  if (!parsed || !silo::access::validate(*parsed, "bucket").is_ok()) return;
  silo::access::Subject who;
  who.access_key = "bob";
  who.source_ip = "10.1.2.3";
  silo::access::Request request;
  request.action = "s3:GetObject";
  request.bucket = "bucket";
  request.key = "a/b.jpg";
  std::ignore = silo::access::evaluate(*parsed, who, request);
  request.action = "s3:ListBucket";
  request.key.reset();
  request.prefix = "a/";
  const silo::access::BucketAccess bucket{"alice", &*parsed, false};
  std::ignore = silo::access::authorize(who, bucket, request);
  std::ignore = silo::access::grants_anything(*parsed, who);
}

void name_template(std::string_view text) {
  const auto t = silo::wire::NameTemplate::parse(text, 1000);
  if (!t) return;
  if (t->size() == 0 || t->size() > 1000) __builtin_trap();
  std::ignore = t->name_at(t->size() - 1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 8) {
    case 0: policy(bytes); break;
    case 1: std::ignore = silo::wire::parse_batch_request_json(bytes); break;
    case 2: std::ignore = silo::wire::apply_bucket_props_json(bytes, silo::wire::BucketProps()); break;
    case 3: std::ignore = silo::wire::parse_job_request_json(bytes); break;
    case 4: std::ignore = silo::wire::parse_dsort_spec_json(bytes); break;
    case 5: std::ignore = silo::wire::parse_user_json(bytes, "key"); break;
    case 6: std::ignore = silo::wire::parse_evict_request_json(bytes); break;
    case 7: name_template(bytes); break;
  }
  return 0;
}
