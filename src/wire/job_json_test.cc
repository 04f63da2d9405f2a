#include "wire/job_json.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "wire/codec.h"

namespace silo::wire {
namespace {

JobInfo finished_scrub() {
  JobInfo job;
  job.set_id("scrub-2");
  job.set_kind("scrub");
  job.set_state("finished");
  job.set_phase("walk");
  job.set_detail("done \"at last\"");
  job.set_started_unix_nanos(1'000'000'000);
  job.set_finished_unix_nanos(3'000'000'000);  // two seconds
  job.set_objects_done(10);
  job.set_objects_total(40);
  job.set_objects_scanned(30);
  job.set_bytes_done(4000);
  job.set_errors(1);
  job.set_corrupt_found(2);
  job.set_corrupt_repaired(1);
  job.set_copies_restored(5);
  RebalanceProgress& t1 = (*job.mutable_nodes())["t1"];
  t1.set_objects_skipped(3);
  t1.add_failed_objects("a: gone");
  RebalanceProgress& t2 = (*job.mutable_nodes())["t2"];
  t2.set_objects_skipped(4);
  t2.add_failed_objects("b: 403");
  return job;
}

TEST(JobJsonTest, ADsortsFiguresComeThrough) {
  JobInfo job;
  job.set_id("dsort-1");
  job.set_kind("dsort");
  job.set_state("finished");
  DsortSummary& d = *job.mutable_dsort();
  d.set_input_objects(200);
  d.set_samples(20000);
  d.set_output_shards(12);
  d.set_bytes(50'000'000);
  d.set_smallest_shard(1'000'000);
  d.set_largest_shard(4'194'304);
  d.set_spilled_bytes(123);
  d.set_duplicate_keys(2);
  d.set_extraction_ms(300);
  d.set_creation_ms(4000);
  d.set_samples_created(15000);
  d.set_input_bytes(49'000'000);
  RebalanceProgress& t1 = (*job.mutable_nodes())["t1"];
  t1.set_samples(5000);
  t1.set_objects_scanned(50);
  t1.set_objects_total(50);
  t1.set_objects_moved(5000);
  t1.set_records_ordered(4000);
  t1.set_shards_planned(3);
  t1.set_shards_created(2);
  t1.set_samples_planned(3000);
  t1.set_samples_created(2000);
  t1.set_shard_bytes_planned(12'000'000);
  t1.set_shard_bytes_created(8'000'000);
  auto decoded = parse_job_json(job_json(job));
  ASSERT_TRUE(decoded.has_value()) << decoded.error();
  ASSERT_TRUE(decoded->dsort.has_value());
  const JobEntry::Dsort::Part part{.id = "t1", .inputs_read = 50, .inputs_total = 50, .records = 5000,
                                   .records_ordered = 4000, .shards_planned = 3, .shards_created = 2,
                                   .samples_planned = 3000, .samples_created = 2000,
                                   .bytes_planned = 12'000'000, .bytes_created = 8'000'000};
  EXPECT_EQ(*decoded->dsort, (JobEntry::Dsort{.samples = 20000, .output_shards = 12, .bytes = 50'000'000,
                                              .smallest_shard = 1'000'000, .largest_shard = 4'194'304,
                                              .spilled_bytes = 123, .duplicate_keys = 2, .input_objects = 200,
                                              .extraction_ms = 300, .creation_ms = 4000,
                                              .samples_created = 15000, .input_bytes = 49'000'000,
                                              .parts = {part}}));
  EXPECT_NE(job_json(job).find(R"("samples":5000)"), std::string::npos) << "the node's extraction figures";
  auto scrub = parse_job_json(job_json(finished_scrub()));
  ASSERT_TRUE(scrub.has_value());
  EXPECT_FALSE(scrub->dsort.has_value());
}

TEST(JobJsonTest, DecodesWhatTheProxyEncodes) {
  auto decoded = parse_job_json(job_json(finished_scrub()));
  ASSERT_TRUE(decoded.has_value()) << decoded.error();
  // The per-node failures come in the order of a protobuf map, which is unspecified.
  std::sort(decoded->failed_objects.begin(), decoded->failed_objects.end());
  JobEntry want;
  want.id = "scrub-2";
  want.kind = "scrub";
  want.state = "finished";
  want.phase = "walk";
  want.detail = "done \"at last\"";
  want.objects_done = 10;
  want.objects_total = 40;
  want.objects_remaining = 10;
  want.bytes_done = 4000;
  want.errors = 1;
  want.corrupt_found = 2;
  want.corrupt_repaired = 1;
  want.copies_restored = 5;
  want.objects_skipped = 7;
  want.bytes_per_second = 2000;
  want.failed_objects = {"a: gone", "b: 403"};
  EXPECT_EQ(*decoded, want);
}

TEST(JobJsonTest, ListRoundTrip) {
  std::vector<JobInfo> jobs = {finished_scrub(), finished_scrub()};
  jobs[1].set_id("scrub-3");
  auto decoded = parse_job_list_json(job_list_json(jobs));
  ASSERT_TRUE(decoded.has_value()) << decoded.error();
  ASSERT_EQ(decoded->size(), 2u);
  EXPECT_EQ((*decoded)[0].id, "scrub-2");
  EXPECT_EQ((*decoded)[1].id, "scrub-3");
  auto none = parse_job_list_json(job_list_json({}));
  ASSERT_TRUE(none.has_value()) << none.error();
  EXPECT_TRUE(none->empty());
}

TEST(JobJsonTest, OlderServersLackTheScrubAndPrefetchFigures) {
  auto decoded = parse_job_json(
      R"({"id": "rebalance-1", "kind": "rebalance", "state": "running", "progress": {"objects_done": 1,)"
      R"( "objects_total": 2, "objects_remaining": 1, "bytes_done": 3, "errors": 0}})");
  ASSERT_TRUE(decoded.has_value()) << decoded.error();
  EXPECT_EQ(decoded->corrupt_found, 0u);
  EXPECT_EQ(decoded->bytes_per_second, 0u);
  EXPECT_TRUE(decoded->failed_objects.empty());
}

TEST(JobJsonTest, MalformedNamesTheDocumentAndField) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "a job: not valid JSON"},
      {R"({"id": "x", "kind": "scrub", "state": "running"})", "a job: 'progress' is missing"},
      {R"({"id": "x", "kind": "scrub", "state": "running", "progress": {"objects_done": "1"}})",
       "a job: 'progress.objects_done' must be a non-negative integer"},
      {R"({"id": "x", "kind": "scrub", "state": "running", "progress": {"objects_done": 1, "objects_total": 1,)"
       R"( "objects_remaining": 0, "bytes_done": 0, "errors": 0}, "failed_objects": [1]})",
       "a job: 'failed_objects[0]' must be a string"},
      {R"({"kind": "scrub"})", "a job: 'id' is missing"},
  };
  for (const auto& [text, message] : cases) {
    auto decoded = parse_job_json(text);
    ASSERT_FALSE(decoded.has_value()) << text;
    EXPECT_EQ(decoded.error().code(), Code::kInvalidArgument) << text;
    EXPECT_EQ(decoded.error().message(), message) << text;
  }
  auto list = parse_job_list_json(R"({"jobs": [{"kind": "scrub"}]})");
  ASSERT_FALSE(list.has_value());
  EXPECT_EQ(list.error().message(), "the job list: 'jobs[0].id' is missing");
}

}  // namespace
}  // namespace silo::wire
