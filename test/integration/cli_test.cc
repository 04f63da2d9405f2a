// The `silo` CLI (docs/cli.md) as a user's script runs it: this build's binary as a
// subprocess against a real local cluster, checking its --json output, its files and its
// exit codes, failures included (no such bucket, bad credentials, unreachable endpoint,
// bad arguments).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "cli_util.h"
#include "moto.h"
#include "objects_util.h"
#include "testing/random.h"

namespace silo::integration {
namespace {

namespace fs = std::filesystem;
using silo::testing::EnvVars;

// The number of times `part` occurs in `text`.
size_t count_of(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size()))
    ++n;
  return n;
}

void write_file(const std::string& path, const std::string& bytes) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string read(const std::string& path) { return read_or(path, "<missing " + path + ">"); }

ClusterOptions small_cluster() {
  return {.proxies = 1, .targets = 3, .mountpaths = 2, .env = {{"SILO_DURABILITY", "page_cache"}}};
}

TEST(CliTest, UsageErrorsHelpAndUnreachable) {
  Cli cli("http://127.0.0.1:1");  // nothing listens on port 1

  const CliResult help = cli.run({"--help"});
  EXPECT_EQ(help.code, kOk) << help;
  for (const char* command : {"bucket", "ls", "put", "get", "rm", "cat", "stat", "prefetch",
                              "evict", "job", "cluster", "node", "mountpath", "Exit codes"}) {
    EXPECT_TRUE(contains(help.out, command)) << command << "\n" << help;
  }
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"bucket", "create", "--help"},
        {"put", "--help"},
        {"get", "--help"},
        {"prefetch", "--help"},
        {"job", "wait", "--help"},
        {"node", "maintenance", "start", "--help"},
        {"mountpath", "disable", "--help"},
        {"ls", "--help"},
        {"stat", "--help"}}) {
    const CliResult r = cli.run(args);
    EXPECT_EQ(r.code, kOk) << args[0] << " " << r;
    EXPECT_TRUE(contains(r.out, "Example")) << args[0] << " " << r;
  }

  const CliResult none = cli.run({});
  EXPECT_EQ(none.code, kUsage) << none;
  const CliResult unknown = cli.run({"frobnicate"});
  EXPECT_EQ(unknown.code, kUsage) << unknown;
  EXPECT_TRUE(contains(unknown.err, "--help")) << unknown;
  const CliResult missing_argument = cli.run({"put", "only-a-file"});
  EXPECT_EQ(missing_argument.code, kUsage) << missing_argument;
  const CliResult bad_number = cli.run({"put", "a", "b", "--workers", "zero"});
  EXPECT_EQ(bad_number.code, kUsage) << bad_number;
  const CliResult bad_address = cli.run({"stat", "http://x/y"});
  EXPECT_EQ(bad_address.code, kUsage) << bad_address;
  EXPECT_TRUE(contains(bad_address.err, "BUCKET[/NAME]")) << bad_address;
  const CliResult no_name = cli.run({"rm", "bucket-only"});
  EXPECT_EQ(no_name.code, kUsage) << no_name;
  const CliResult json_usage = cli.run({"--json", "bucket", "create"});
  EXPECT_EQ(json_usage.code, kUsage) << json_usage;
  EXPECT_TRUE(contains(json_usage.err, R"("exit_code":2)")) << json_usage;

  // Unreachable: exit code 5 and a hint that names the endpoint and how to set it.
  const CliResult unreachable = cli.run({"bucket", "ls"});
  EXPECT_EQ(unreachable.code, kUnreachable) << unreachable;
  EXPECT_TRUE(contains(unreachable.err, "http://127.0.0.1:1")) << unreachable;
  EXPECT_TRUE(contains(unreachable.err, "SILO_ENDPOINT")) << unreachable;
  const CliResult unreachable_json = cli.run({"ls", "b", "--json"});
  EXPECT_EQ(unreachable_json.code, kUnreachable) << unreachable_json;
  EXPECT_TRUE(contains(unreachable_json.err, R"("exit_code":5)")) << unreachable_json;
  EXPECT_EQ(unreachable_json.out, "") << "errors go to stderr";
  // The --endpoint flag beats SILO_ENDPOINT; a malformed one is a usage error.
  const CliResult bad_endpoint = cli.run({"--endpoint", "ftp://x:y:z", "bucket", "ls"});
  EXPECT_EQ(bad_endpoint.code, kUsage) << bad_endpoint;

}

// `silo dsort` refuses a bad job before it connects: nothing listens at the endpoint, so a
// command that tried would exit 5, not 2. Each error names the problem.
TEST(CliTest, DsortArgumentErrorsComeBeforeAnyConnection) {
  Cli cli("http://127.0.0.1:1");
  const CliResult help = cli.run({"dsort", "--help"});
  EXPECT_EQ(help.code, kOk) << help;
  EXPECT_TRUE(contains(help.out, "Example")) << help;
  EXPECT_TRUE(contains(help.out, "--shard-size")) << help;

  const std::string spec = cli.dir() + "/job.json";
  write_file(spec, R"({"kind": "dsort"})");
  const std::vector<std::string> job = {"dsort", "src", "out", "--template", "t-{000..999}.tar"};
  const auto with = [&job](std::vector<std::string> more) {
    std::vector<std::string> args = job;
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"dsort"}, "--spec FILE"},
      {{"dsort", "src"}, "OUT_BUCKET is missing"},
      {{"dsort", "src", "out", "--shard-size", "1MiB"}, "--template is missing"},
      {job, "--shard-size is missing"},
      {{"dsort", "--spec", spec, "src", "out"}, "SRC_BUCKET, OUT_BUCKET cannot go with it"},
      {{"dsort", "--spec", spec, "--seed", "3", "--dry-run"},
       "--seed, --dry-run cannot go with it"},
      {{"dsort", "--spec", cli.dir() + "/no-such.json"}, "cannot be read"},
      {{"dsort", "--spec", "-"}, "is empty"},  // stdin is /dev/null
      {with({"--shard-size", "1 parsec"}), "unknown size unit"},
      {with({"--shard-size", "0"}), "more than 0"},
      {with({"--shard-size", "1MiB", "--memory-limit", "lots"}), "--memory-limit"},
      {{"dsort", "src", "out", "--template", "t-{0..9", "--shard-size", "1MiB"},
       "not a brace template"},
      {with({"--shard-size", "1MiB", "--input-template", "in-{0..9"}), "--input-template"},
      {with({"--shard-size", "1MiB", "--prefix", "a/", "--input-template", "in-{0..9}.tar"}),
       "--prefix and --input-template"},
      {{"dsort", "src/a/", "out", "--template", "t-{0..9}.tar", "--shard-size", "1MiB", "--prefix",
        "b/"},
       "SRC_BUCKET/PREFIX"},
      {{"dsort", "src", "out/dir", "--template", "t-{0..9}.tar", "--shard-size", "1MiB"},
       "names more than a bucket"},
      {with({"--shard-size", "1MiB", "--loose", "--input-template", "in-{0..9}.tar"}), "--loose"},
      {with({"--shard-size", "1MiB", "--order", "key", "--seed", "4"}),
       "--seed applies to --order random"},
      {with({"--shard-size", "1MiB", "--order", "content"}), "needs --content-member"},
      {with({"--shard-size", "1MiB", "--order", "list"}), "needs --list"},
      {with({"--shard-size", "1MiB", "--content-member", "cls", "--list", "b/keys.json"}),
       "pick one"},
      {with({"--list", "just-a-bucket"}), "BUCKET/NAME"},
      {with({"--shard-size", "1MiB", "--order", "shuffle"}), "--order"},
      {with({"--shard-size", "1MiB", "--content-member", "cls", "--content-type", "double"}),
       "--content-type"},
      {with({"--shard-size", "1MiB", "--on-duplicate", "drop"}), "--on-duplicate"},
  };
  for (const auto& [args, message] : cases) {
    const CliResult r = cli.run(args);
    EXPECT_EQ(r.code, kUsage) << r;
    EXPECT_TRUE(contains(r.err, message)) << "expected '" << message << "' in: " << r;
  }
  const CliResult json = cli.run({"dsort", "--json"});
  EXPECT_EQ(json.code, kUsage) << json;
  EXPECT_TRUE(contains(json.err, R"("exit_code":2)")) << json;

  // Good jobs get as far as the endpoint: a spec file as is, flags (--order list needs no
  // --shard-size).
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"dsort", "--spec", spec, "--wait"},
        with({"--shard-size", "256MiB", "--seed", "7", "--on-duplicate", "fail", "--memory-limit",
              "1GiB"}),
        with({"--list", "b/keys.json", "--prefix", "raw/", "--loose", "--dry-run"})}) {
    const CliResult r = cli.run(args);
    EXPECT_EQ(r.code, kUnreachable) << r;
  }
}

struct CliOutput {
  int code = -1;
  std::string text;  // stdout and stderr
};

// Runs argv and returns its exit code and output.
CliOutput run_shell(const std::vector<std::string>& argv) {
  auto dir = silo::testing::TempDir::create("silo-shell");
  EXPECT_TRUE(dir.has_value());
  if (!dir) return {};
  silo::testing::CommandOptions options;
  options.output_path = dir->path() + "/output";
  options.env = {{"HOME", dir->path()}, {"TERM", "xterm"}};
  options.timeout = std::chrono::milliseconds(60000);
  auto code = silo::testing::run_command(argv, options);
  EXPECT_TRUE(code.has_value()) << code.status();
  return {code.has_value() ? *code : -1, read_or(options.output_path, "")};
}

// What bash and zsh complete for `silo` (cmd/silo/completion), driven as a user's shell:
// bash calls _silo with COMP_WORDS set; zsh gets the line and a TAB in a pseudo-terminal.
TEST(CliTest, ShellCompletionsOfBashAndZsh) {
  const std::string dir = std::string(SILO_SOURCE_DIR) + "/cmd/silo/completion";
  const auto bash_complete = [&](const std::string& words) {
    CliOutput out = run_shell({"bash", "-c",
                               "source " + shell_quote(dir + "/silo.bash") + "; COMP_WORDS=(" + words +
                                   "); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _silo; printf '%s\\n' \"${COMPREPLY[@]}\""});
    EXPECT_EQ(out.code, 0) << out.text;
    return out.text;
  };
  std::string r = bash_complete("silo ''");
  for (const char* command : {"bucket", "put", "get", "prefetch", "job", "cluster", "mountpath", "config"}) {
    EXPECT_TRUE(contains(r, std::string(command) + "\n")) << command << " in:\n" << r;
  }
  r = bash_complete("silo mountpath ''");
  EXPECT_EQ(r, "ls\nenable\ndisable\nattach\ndetach\n");
  r = bash_complete("silo mountpath detach --w");
  EXPECT_EQ(r, "--wait\n");
  r = bash_complete("silo config ''");
  EXPECT_EQ(r, "show\nset\nreset\n");
  r = bash_complete("silo config set cache.h");
  EXPECT_EQ(r, "cache.high_wm=\n");
  r = bash_complete("silo bucket props set b co");
  EXPECT_EQ(r, "copies=\n");

  if (run_shell({"sh", "-c", "command -v zsh"}).code != 0) {
    GTEST_SKIP() << "zsh is not installed (tools/setup.sh installs it)";
  }
  const auto zsh_complete = [&](const std::string& line) {
    CliOutput out = run_shell({"zsh", "-f", std::string(SILO_SOURCE_DIR) + "/test/integration/complete.zsh", dir, line});
    EXPECT_EQ(out.code, 0) << out.text;
    return out.text;
  };
  r = zsh_complete("silo mountpath ");
  for (const char* word : {"ls", "enable", "disable", "attach", "detach"}) EXPECT_TRUE(contains(r, word)) << word << " in:\n" << r;
  r = zsh_complete("silo job ");
  for (const char* word : {"show", "wait", "abort"}) EXPECT_TRUE(contains(r, word)) << word << " in:\n" << r;
  r = zsh_complete("silo conf");  // one match: the line is completed in place
  EXPECT_TRUE(contains(r, "silo config")) << r;
  r = zsh_complete("silo config ");
  for (const char* word : {"show", "set", "reset"}) EXPECT_TRUE(contains(r, word)) << word << " in:\n" << r;
}

TEST(CliTest, BucketsObjectsListingAndFailures) {
  ASSERT_OK_AND_ASSIGN(auto cluster, LocalCluster::start(small_cluster()));
  Cli cli(cluster->endpoint());
  silo::testing::Random random;

  // Buckets.
  CliResult r = cli.run({"bucket", "create", "photos", "--json"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_TRUE(contains(r.out, R"("bucket":"photos")")) << r;
  r = cli.run({"bucket", "create", "photos"});
  EXPECT_EQ(r.code, kError) << "exists already: " << r;
  EXPECT_EQ(cli.run({"bucket", "create", "photos", "--ignore-existing"}).code, kOk);
  ASSERT_EQ(cli.run({"bucket", "create", "s3://coded", "ec.data=2", "ec.parity=1"}).code, kOk);
  r = cli.run({"bucket", "ls", "--json"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_TRUE(contains(r.out, R"("name":"photos")") && contains(r.out, R"("name":"coded")")) << r;
  r = cli.run({"bucket", "ls"});
  EXPECT_TRUE(contains(r.out, "ec 2+1")) << r;

  // Properties: set as KEY=VALUE, shown as JSON and as the same KEY=VALUE names.
  r = cli.run({"bucket", "props", "set", "photos", "copies=2", "durability=fsync", "--json"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_TRUE(contains(r.out, R"("copies":2)")) << r;
  r = cli.run({"bucket", "props", "show", "photos"});
  EXPECT_EQ(r.code, kOk) << r;
  EXPECT_TRUE(contains(r.out, "copies") && contains(r.out, "fsync")) << r;
  r = cli.run({"bucket", "props", "show", "coded", "--json"});
  EXPECT_TRUE(contains(r.out, R"("data":2)") && contains(r.out, R"("parity":1)")) << r;
  r = cli.run({"bucket", "props", "set", "coded", "ec.data=1", "--json"});  // parity stays 1
  EXPECT_EQ(r.code, kOk) << r;
  EXPECT_TRUE(contains(r.out, R"("data":1)") && contains(r.out, R"("parity":1)")) << r;
  r = cli.run({"bucket", "props", "set", "coded", "ec=2+2"});
  EXPECT_EQ(r.code, kUsage) << "3 targets cannot hold 4 slices: " << r;
  EXPECT_TRUE(contains(r.err, "needs 4 targets")) << r;
  EXPECT_EQ(cli.run({"bucket", "props", "set", "photos", "copies=many"}).code, kUsage);
  r = cli.run({"bucket", "props", "set", "photos", "colour=blue"});
  EXPECT_EQ(r.code, kUsage) << "the server refuses an unknown property: " << r;
  EXPECT_TRUE(contains(r.err, "colour")) << r;
  EXPECT_EQ(cli.run({"bucket", "props", "set", "photos", "copies"}).code, kUsage);
  EXPECT_EQ(cli.run({"bucket", "props", "show", "nosuch"}).code, kNotFound);
  r = cli.run({"ls", "nosuch", "--json"});
  EXPECT_EQ(r.code, kNotFound) << r;
  EXPECT_TRUE(contains(r.err, R"("exit_code":3)")) << r;

  // put DIR: every file, recursively, in parallel, under the prefix.
  std::map<std::string, std::string> files;  // relative path -> bytes
  for (int i = 0; i < 12; ++i)
    files[fmt::format("shard-{:02}.tar", i)] = random.bytes(random.uniform(0, 64 * 1024));
  files["val/a.tar"] = random.bytes(3 * 1024 * 1024 + 7);  // several stream buffers
  files["val/deep/b.tar"] = random.bytes(100);
  const std::string src = cli.dir() + "/src";
  for (const auto& [rel, bytes] : files) write_file(src + "/" + rel, bytes);
  r = cli.run({"put", src, "photos/train/", "--json", "--workers", "4"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_TRUE(contains(r.out, fmt::format(R"("summary":{{"objects":{},)", files.size()))) << r;
  EXPECT_TRUE(contains(r.out, R"("failed":0)")) << r;
  for (const auto& [rel, bytes] : files) {
    ASSERT_OK_AND_ASSIGN(const std::string got, cluster->client().get("photos", "train/" + rel));
    EXPECT_EQ(difference(bytes, got), "") << rel;
  }
  // --direct (or SILO_DIRECT=1): object data straight to and from the owner targets.
  r = cli.run({"put", src, "photos/direct/", "--direct", "--json"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_TRUE(contains(r.out, R"("failed":0)")) << r;
  for (const auto& [rel, bytes] : files) {
    r = cli.run({"cat", "photos/direct/" + rel}, {{"SILO_DIRECT", "1"}});
    ASSERT_EQ(r.code, kOk) << r;
    EXPECT_EQ(difference(bytes, r.out), "") << rel;
  }
  r = cli.run({"ls", "photos"}, {{"SILO_DIRECT", "maybe"}});
  EXPECT_EQ(r.code, kUsage) << r;
  EXPECT_TRUE(contains(r.err, "SILO_DIRECT")) << r;
  // Plain lines when not on a terminal: one per object.
  r = cli.run({"put", src + "/val", "photos/again"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_EQ(count_of(r.out, "put "), 2u) << r;
  EXPECT_TRUE(contains(r.out, "photos/again/deep/b.tar")) << r;
  // put FILE: named after the file, or as given; put -: stdin.
  ASSERT_EQ(cli.run({"put", src + "/shard-00.tar", "photos"}).code, kOk);
  ASSERT_OK_AND_ASSIGN(const std::string single, cluster->client().get("photos", "shard-00.tar"));
  EXPECT_EQ(single, files["shard-00.tar"]);
  ASSERT_EQ(cli.run({"put", src + "/val/a.tar", "photos/renamed.bin"}).code, kOk);
  r = cli.run({"put", "-", "photos/from-stdin", "--json"}, {}, src + "/val/deep/b.tar");
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_TRUE(contains(r.out, R"("size":100)")) << r;
  ASSERT_OK_AND_ASSIGN(const std::string piped, cluster->client().get("photos", "from-stdin"));
  EXPECT_EQ(piped, files["val/deep/b.tar"]);
  EXPECT_EQ(cli.run({"put", "-", "photos"}).code, kUsage) << "stdin needs a name";
  // A large file goes up as a multipart upload, its parts in parallel: 23 MiB in 5 MiB parts.
  const std::string large = random.bytes(23 * 1024 * 1024 + 11);
  write_file(cli.dir() + "/large.bin", large);
  r = cli.run({"put", cli.dir() + "/large.bin", "photos/large.bin", "--multipart-threshold-mib", "8",
               "--part-size-mib", "5", "--part-workers", "3", "--json"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_TRUE(contains(r.out, "-5\"")) << "a multipart ETag of 5 parts: " << r;
  ASSERT_OK_AND_ASSIGN(const std::string large_back, cluster->client().get("photos", "large.bin"));
  EXPECT_TRUE(large_back == large) << "the parts came back in order";
  EXPECT_EQ(cli.run({"put", cli.dir() + "/large.bin", "photos/x", "--part-size-mib", "4"}).code, kUsage);
  EXPECT_EQ(cli.run({"put", cli.dir() + "/nothing-here", "photos"}).code, kUsage);
  EXPECT_EQ(cli.run({"put", src, "nosuch/x/"}).code, kNotFound);

  // ls: one level by default, everything with --recursive; --limit, --summary, --long.
  r = cli.run({"ls", "photos/train/", "--json"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_EQ(count_of(r.out, R"("name":)"), 12u) << r;
  EXPECT_TRUE(contains(r.out, R"("directories":["train/val/"])")) << r;
  r = cli.run({"ls", "photos/train/", "--recursive", "--json"});
  EXPECT_EQ(count_of(r.out, R"("name":)"), files.size()) << r;
  EXPECT_TRUE(contains(r.out, R"("name":"train/val/deep/b.tar","size":100)")) << r;
  r = cli.run({"ls", "photos", "-r", "--limit", "5", "--json"});
  EXPECT_EQ(count_of(r.out, R"("name":)"), 5u) << r;
  EXPECT_TRUE(contains(r.out, R"("truncated":true)")) << r;
  r = cli.run({"ls", "photos/train/val/", "-r", "--summary", "--json"});
  EXPECT_TRUE(contains(
      r.out, fmt::format(R"("summary":{{"objects":2,"bytes":{}}})", 3 * 1024 * 1024 + 7 + 100)))
      << r;
  r = cli.run({"ls", "photos/train/", "--long"});
  EXPECT_EQ(r.code, kOk) << r;
  EXPECT_TRUE(contains(r.out, "MODIFIED") && contains(r.out, "13 objects") == false) << r;
  EXPECT_TRUE(contains(r.out, "12 objects")) << r;
  r = cli.run({"ls"});
  EXPECT_TRUE(contains(r.out, "photos") && contains(r.out, "coded")) << r;

  // get: one object to a file, a directory or stdout; a range; a prefix into a directory.
  const std::string out = cli.dir() + "/out";
  fs::create_directories(out);
  r = cli.run({"get", "photos/train/val/a.tar", out + "/a.tar", "--json"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_EQ(difference(files["val/a.tar"], read(out + "/a.tar")), "");
  ASSERT_EQ(cli.run({"get", "s3://photos/train/shard-03.tar", out}).code, kOk);
  EXPECT_EQ(read(out + "/shard-03.tar"), files["shard-03.tar"]);
  r = cli.run({"get", "photos/train/val/a.tar", "-", "--offset", "1000", "--length", "50"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_EQ(r.out, files["val/a.tar"].substr(1000, 50));
  r = cli.run({"cat", "photos/train/val/deep/b.tar"});
  EXPECT_EQ(r.out, files["val/deep/b.tar"]);
  r = cli.run({"cat", "photos/train/val/a.tar", "--offset", std::to_string(3 * 1024 * 1024)});
  EXPECT_EQ(r.out, files["val/a.tar"].substr(3 * 1024 * 1024));
  r = cli.run({"get", "photos/train/", out + "/tree", "--json"});
  ASSERT_EQ(r.code, kOk) << r;
  for (const auto& [rel, bytes] : files)
    EXPECT_EQ(difference(bytes, read(out + "/tree/" + rel)), "") << rel;
  r = cli.run({"get", "photos/train/val", out + "/val-dir", "--prefix"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_EQ(read(out + "/val-dir/val/deep/b.tar"), files["val/deep/b.tar"]);
  r = cli.run({"get", "photos/missing", out + "/missing"});
  EXPECT_EQ(r.code, kNotFound) << r;
  EXPECT_FALSE(fs::exists(out + "/missing")) << "no file for a failed get";
  EXPECT_FALSE(fs::exists(out + "/missing.silo-partial"));
  EXPECT_EQ(cli.run({"get", "photos/nothing-under/", out}).code, kNotFound);
  EXPECT_EQ(cli.run({"cat", "photos/train/val/a.tar", "--length", "0"}).code, kUsage);

  // stat: size, ETag, and where the two copies are placed.
  r = cli.run({"stat", "photos/train/val/a.tar", "--json"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_TRUE(contains(r.out, fmt::format(R"("size":{})", files["val/a.tar"].size()))) << r;
  ASSERT_OK_AND_ASSIGN(const auto head, cluster->client().head("photos", "train/val/a.tar"));
  EXPECT_TRUE(contains(r.out, fmt::format(R"("etag":"{}")", head.etag))) << r;
  EXPECT_EQ(count_of(r.out, R"("node":)"), 2u) << "copies=2: " << r;
  EXPECT_EQ(count_of(r.out, R"("found":"full copy)"), 2u) << "each holder asked for its copy: " << r;
  r = cli.run({"stat", "photos/train/val/a.tar"});
  EXPECT_TRUE(contains(r.out, "owner, full copy")) << r;
  EXPECT_EQ(cli.run({"stat", "photos/nope"}).code, kNotFound);

  // rm: objects, a prefix; missing ones are "not found".
  r = cli.run({"rm", "photos/renamed.bin", "photos/from-stdin", "--json"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_TRUE(contains(r.out, R"("removed":["photos/renamed.bin","photos/from-stdin"])")) << r;
  EXPECT_CODE(cluster->client().head("photos", "renamed.bin"), Code::kNotFound);
  r = cli.run({"rm", "photos/train/val/", "--prefix"});
  ASSERT_EQ(r.code, kOk) << r;
  ASSERT_OK_AND_ASSIGN(const auto left, cluster->client().list_all("photos", "train/val/"));
  EXPECT_TRUE(left.empty());
  EXPECT_EQ(cli.run({"rm", "photos/renamed.bin"}).code, kNotFound);

  // Credentials: wrong keys are exit code 4, from flags, the environment or a config file.
  r = cli.run({"bucket", "ls"}, {{"SILO_SECRET_KEY", "wrong"}});
  EXPECT_EQ(r.code, kAuth) << r;
  EXPECT_TRUE(contains(r.err, "SILO_SECRET_KEY")) << r;
  r = cli.run({"ls", "photos", "--access-key", "nobody", "--json"});
  EXPECT_EQ(r.code, kAuth) << r;
  write_file(
      cli.dir() + "/.config/silo/config.json",
      fmt::format(
          R"({{"endpoint": "{}", "access_key": "silo-admin", "secret_key": "silo-secret-key"}})",
          cluster->endpoint()));
  r = cli.run({"bucket", "ls"},
              {{"SILO_ENDPOINT", ""}, {"SILO_ACCESS_KEY", ""}, {"SILO_SECRET_KEY", ""}});
  EXPECT_EQ(r.code, kOk) << "the config file gives endpoint and keys: " << r;
  write_file(cli.dir() + "/bad.json", "{\"endpoint\": 7}");
  EXPECT_EQ(cli.run({"--config", cli.dir() + "/bad.json", "bucket", "ls"}).code, kUsage);

  // Buckets go.
  r = cli.run({"bucket", "rm", "coded", "--json"});
  EXPECT_EQ(r.code, kOk) << r;
  EXPECT_EQ(cli.run({"bucket", "rm", "coded"}).code, kNotFound);
}

TEST(CliTest, ClusterNodesMountpathsAndJobs) {
  ASSERT_OK_AND_ASSIGN(auto cluster, LocalCluster::start(small_cluster()));
  Cli cli(cluster->endpoint());
  ASSERT_OK(cluster->client().create_bucket("data", R"({"copies": 2})"));
  for (int i = 0; i < 40; ++i)
    ASSERT_OK(cluster->client().put("data", fmt::format("o-{}", i), std::string(1000, 'x')));

  CliResult r = cli.run({"cluster", "show", "--json"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_EQ(count_of(r.out, R"("role":"target")"), 3u) << r;
  EXPECT_EQ(count_of(r.out, R"("role":"proxy")"), 1u) << r;
  EXPECT_EQ(count_of(r.out, R"("is_primary":true)"), 1u) << r;
  EXPECT_EQ(count_of(r.out, R"("path":)"), 6u) << "2 mountpaths on each of 3 targets: " << r;
  r = cli.run({"cluster", "show"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_TRUE(contains(r.out, "primary") && contains(r.out, "t1") && contains(r.out, "MOUNTPATH"))
      << r;
  // The configuration of the node at the endpoint, secrets masked.
  r = cli.run({"config", "show"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_TRUE(contains(r.out, R"("cluster":)") && contains(r.out, R"("low_wm":)")) << r;
  EXPECT_FALSE(contains(r.out, "silo-secret-key")) << "the admin secret never shows: " << r;

  // Mountpaths: list, disable, enable (by id or by path).
  r = cli.run({"mountpath", "ls", "t1", "--json"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_EQ(count_of(r.out, R"("path":)"), 2u) << r;
  ASSERT_OK_AND_ASSIGN(const auto mountpaths,
                       cluster->client_of("t1").value()->mountpaths(cluster->node("t1")->url));
  ASSERT_EQ(mountpaths.size(), 2u);
  r = cli.run({"mountpath", "disable", "t1", mountpaths[1].id, "--json"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_TRUE(contains(r.out, R"("state":"disabled")")) << r;
  r = cli.run({"mountpath", "enable", "t1", mountpaths[1].path, "--json"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_FALSE(contains(r.out, R"("state":"disabled")")) << r;
  EXPECT_EQ(cli.run({"mountpath", "disable", "t1", "no-such-mountpath"}).code, kNotFound);
  EXPECT_EQ(cli.run({"mountpath", "ls", "t99"}).code, kNotFound);
  EXPECT_EQ(cli.run({"mountpath", "disable", "p1", "x"}).code, kUsage);

  // Maintenance: the node's mode changes and the rebalance it starts is waited for.
  r = cli.run({"node", "maintenance", "start", "t3", "--wait", "--json"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_TRUE(contains(r.out, R"("kind":"rebalance")") && contains(r.out, R"("state":"finished")"))
      << r;
  const size_t id_at = r.out.find(R"("id":")");
  ASSERT_NE(id_at, std::string::npos) << r;
  const std::string job_id = r.out.substr(id_at + 6, r.out.find('"', id_at + 6) - id_at - 6);
  r = cli.run({"cluster", "show", "--json"});
  EXPECT_TRUE(contains(r.out, R"("id":"t3","role":"target")")) << r;
  EXPECT_TRUE(contains(r.out, R"("mode":"maintenance")") ||
              contains(r.out, R"("state":"maintenance")"))
      << r;
  r = cli.run({"node", "maintenance", "stop", "t3", "--json"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_TRUE(contains(r.out, R"("node":"t3")")) << r;
  EXPECT_EQ(cli.run({"node", "maintenance", "start", "t42"}).code, kNotFound);

  // Jobs: list, show, wait; unknown ids are "not found".
  r = cli.run({"job", "ls", "--json"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_TRUE(contains(r.out, R"("id":")" + job_id + "\"")) << r;
  r = cli.run({"job", "wait", job_id, "--json"});
  EXPECT_EQ(r.code, kOk) << r;
  r = cli.run({"job", "show", job_id});
  EXPECT_EQ(r.code, kOk) << r;
  EXPECT_TRUE(contains(r.out, job_id)) << r;
  EXPECT_EQ(cli.run({"job", "show", "no-such-job"}).code, kNotFound);
  EXPECT_EQ(cli.run({"job", "wait", "no-such-job", "--json"}).code, kNotFound);

  // A scrub job, waited for with plain progress lines.
  r = cli.run({"scrub", "data", "--wait"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_TRUE(contains(r.out, "started scrub job") && contains(r.out, "finished")) << r;
  EXPECT_EQ(cli.run({"scrub", "nosuch"}).code, kNotFound);
  // A rebalance started by hand, with the owners as they are.
  r = cli.run({"rebalance", "--wait"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_TRUE(contains(r.out, "started rebalance job rebalance-") && contains(r.out, "finished")) << r;

  // A job aborted while it runs: a scrub held to 1 KB/s per target.
  r = cli.run({"scrub", "data", "--rate", "0.001", "--json"});
  ASSERT_EQ(r.code, kOk) << r;
  const size_t scrub_at = r.out.find(R"("id":")");
  ASSERT_NE(scrub_at, std::string::npos) << r;
  const std::string scrub_id = r.out.substr(scrub_at + 6, r.out.find('"', scrub_at + 6) - scrub_at - 6);
  r = cli.run({"job", "abort", scrub_id, "--json"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_TRUE(contains(r.out, R"("aborted":true)")) << r;
  r = cli.run({"job", "wait", scrub_id, "--json"});
  EXPECT_EQ(r.code, kError) << "waiting on an aborted job fails: " << r;
  EXPECT_TRUE(contains(r.out + r.err, "aborted")) << r;
  EXPECT_EQ(cli.run({"job", "abort", "no-such-job"}).code, kNotFound);

  // Decommission needs an admin; non-admin keys are refused with exit code 4.
  r = cli.run({"node", "decommission", "t2", "--access-key", "someone", "--secret-key", "x"});
  EXPECT_EQ(r.code, kAuth) << r;
  // As the admin it moves every object off t2 and takes t2 out of the cluster.
  r = cli.run({"node", "decommission", "t2", "--wait", "--json"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_TRUE(contains(r.out, R"("kind":"rebalance")") && contains(r.out, R"("state":"finished")")) << r;
  r = cli.run({"cluster", "show", "--json"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_EQ(count_of(r.out, R"("role":"target")"), 2u) << "t2 left the cluster: " << r;
  for (int i = 0; i < 40; ++i) {
    r = cli.run({"cat", fmt::format("data/o-{}", i)});
    ASSERT_EQ(r.code, kOk) << r;
    EXPECT_EQ(r.out, std::string(1000, 'x'));
  }
}

// Waits until the target's last resilver or detach has ended.
void wait_for_mountpath_work(silo::client::Client& c, const std::string& url) {
  for (int i = 0; i < 600; ++i) {
    auto work = c.mountpath_work(url);
    ASSERT_TRUE(work.has_value()) << work.status();
    if (work->state != "running") return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  FAIL() << "the resilver on " << url << " did not end in 60 s";
}

TEST(CliTest, MountpathsAttachAndDetachAtRunTime) {
  ASSERT_OK_AND_ASSIGN(auto cluster, LocalCluster::start({.proxies = 1, .targets = 2, .mountpaths = 1,
                                                          .env = {{"SILO_DURABILITY", "page_cache"}}}));
  Cli cli(cluster->endpoint());
  ASSERT_OK(cluster->client().create_bucket("data"));
  std::vector<std::string> names;
  for (int i = 0; i < 80; ++i) {
    names.push_back(fmt::format("shard-{:03}.tar", i));
    ASSERT_OK(cluster->client().put("data", names.back(), "bytes of " + names.back()));
  }
  const auto expect_all_readable = [&](const std::string& when) {
    for (const std::string& name : names) {
      auto data = cluster->client().get("data", name);
      ASSERT_TRUE(data.has_value()) << when << ": " << name << ": " << data.status();
      EXPECT_EQ(*data, "bytes of " + name) << when;
    }
  };
  const std::string url = cluster->node("t1")->url;
  ASSERT_OK_AND_ASSIGN(const auto admin_client, cluster->client_of("t1"));
  silo::client::Client& admin = *admin_client;
  wait_for_mountpath_work(admin, url);  // the first start's resilver
  ASSERT_OK_AND_ASSIGN(const auto before, admin.mountpaths(url));
  ASSERT_EQ(before.size(), 1u);
  const std::string original = before[0].path;
  const std::string extra = cli.dir() + "/t1-disk2";

  // Attach: a new, empty directory becomes a mountpath in service and takes its share.
  CliResult r = cli.run({"mountpath", "attach", "t1", extra, "--json"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_TRUE(contains(r.out, R"("path":")" + extra + "\"") && contains(r.out, R"("state":"in_service")")) << r;
  wait_for_mountpath_work(admin, url);
  r = cli.run({"mountpath", "ls", "t1", "--json"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_EQ(count_of(r.out, R"("path":)"), 2u) << r;
  EXPECT_FALSE(fs::is_empty(extra + "/obj")) << "the resilver moved objects onto the attached mountpath";
  expect_all_readable("after attach");
  // Attaching it twice, a relative path, or on a proxy is refused.
  r = cli.run({"mountpath", "attach", "t1", extra});
  EXPECT_EQ(r.code, kError) << r;
  EXPECT_TRUE(contains(r.err, "attached already")) << r;
  r = cli.run({"mountpath", "attach", "t1", "relative/dir"});
  EXPECT_EQ(r.code, kUsage) << r;
  EXPECT_TRUE(contains(r.err, "absolute")) << r;
  EXPECT_EQ(cli.run({"mountpath", "attach", "p1", extra}).code, kUsage);
  EXPECT_EQ(cli.run({"mountpath", "attach", "t1", "/x", "--access-key", "someone", "--secret-key", "x"}).code, kAuth);

  // Detach the original one: everything moves to the attached one, which is then the
  // last one in service and cannot be detached.
  r = cli.run({"mountpath", "detach", "t1", original, "--wait", "--json"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_TRUE(contains(r.out, R"("state":"detached")")) << r;
  EXPECT_FALSE(contains(r.out, R"("objects_moved":0,)")) << r;
  r = cli.run({"mountpath", "ls", "t1", "--json"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_EQ(count_of(r.out, R"("path":)"), 1u) << r;
  EXPECT_TRUE(contains(r.out, extra)) << r;
  EXPECT_TRUE(contains(r.out, R"("resilver":{"state":"finished","reason":"detach of mountpath )" + original)) << r;
  size_t files_left = 0;
  for (const auto& entry : fs::recursive_directory_iterator(original + "/obj")) files_left += entry.is_regular_file();
  EXPECT_EQ(files_left, 0u) << "no object file stays on the detached mountpath";
  expect_all_readable("after detach");
  r = cli.run({"mountpath", "detach", "t1", extra, "--wait"});
  EXPECT_EQ(r.code, kError) << r;
  EXPECT_TRUE(contains(r.err, "last one in service")) << r;
  EXPECT_EQ(cli.run({"mountpath", "detach", "t1", "no-such-mountpath"}).code, kNotFound);

  // A restart opens what is attached now, not what the config file lists.
  ASSERT_OK(cluster->restart("t1"));
  r = cli.run({"mountpath", "ls", "t1", "--json"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_EQ(count_of(r.out, R"("path":)"), 1u) << r;
  EXPECT_TRUE(contains(r.out, extra)) << r;
  expect_all_readable("after restart");
  // Attached again, the old directory is an empty mountpath in service.
  r = cli.run({"mountpath", "attach", "t1", original, "--json"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_TRUE(contains(r.out, R"("state":"in_service")")) << r;
  wait_for_mountpath_work(admin, url);
  expect_all_readable("after attaching the old one again");
}

TEST(CliTest, RemoteBucketPrefetchAndEvictFromS3) {
  ASSERT_OK_AND_ASSIGN(auto moto, MotoServer::start());
  ASSERT_OK(moto->create_bucket("origin"));
  BackendDriver driver;
  ASSERT_OK_AND_ASSIGN(auto origin, driver.make("origin", moto->url()));
  std::map<std::string, std::string> objects;
  silo::testing::Random random;
  for (int i = 0; i < 20; ++i)
    objects[fmt::format("train-{:04}.tar", i)] = random.bytes(random.uniform(1, 20000));
  for (int i = 0; i < 5; ++i) objects[fmt::format("val/{}", i)] = random.bytes(500);
  for (const auto& [name, bytes] : objects) ASSERT_OK(driver.put(*origin, name, bytes).status());

  ASSERT_OK_AND_ASSIGN(auto cluster, LocalCluster::start(small_cluster()));
  Cli cli(cluster->endpoint());
  CliResult r = cli.run({"bucket", "create", "cache", "backend.url=s3://origin",
                         "backend.endpoint=" + moto->url(),
                         std::string("backend.access_key=") + MotoServer::kAccessKey,
                         std::string("backend.secret_key=") + MotoServer::kSecretKey});
  ASSERT_EQ(r.code, kOk) << r;
  r = cli.run({"bucket", "props", "show", "cache"});
  EXPECT_TRUE(contains(r.out, "s3://origin") && !contains(r.out, MotoServer::kSecretKey)) << r;
  r = cli.run({"bucket", "create", "wrong", "backend.url=s3://no-such-origin",
               "backend.endpoint=" + moto->url(),
               std::string("backend.access_key=") + MotoServer::kAccessKey,
               std::string("backend.secret_key=") + MotoServer::kSecretKey});
  EXPECT_NE(r.code, kOk) << r;

  // Nothing cached yet: the listing shows the backend's objects as not cached.
  r = cli.run({"ls", "s3://cache", "-r", "--json"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_EQ(count_of(r.out, R"("cached":false)"), objects.size()) << r;
  r = cli.run({"ls", "cache", "--cached", "-r", "--summary", "--json"});
  EXPECT_TRUE(contains(r.out, R"("objects":0)")) << r;

  // Prefetch by template, waited for: the job's final state as JSON.
  r = cli.run(
      {"prefetch", "s3://cache", "--template", "train-{0000..0009}.tar", "--wait", "--json"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_TRUE(contains(r.out, R"("kind":"prefetch")") && contains(r.out, R"("state":"finished")"))
      << r;
  EXPECT_TRUE(contains(r.out, R"("objects_done":10)")) << r;
  // By list file, not waited for: then `job wait`.
  write_file(cli.dir() + "/names.txt", "# wanted\ntrain-0010.tar\n\ntrain-0011.tar\n");
  r = cli.run({"prefetch", "cache", "--list", cli.dir() + "/names.txt", "--json"});
  ASSERT_EQ(r.code, kOk) << r;
  const size_t id_at = r.out.find(R"("id":")");
  ASSERT_NE(id_at, std::string::npos) << r;
  const std::string job_id = r.out.substr(id_at + 6, r.out.find('"', id_at + 6) - id_at - 6);
  r = cli.run({"job", "wait", job_id});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_TRUE(contains(r.out, "finished")) << r;
  // By prefix (BUCKET/PREFIX works as --prefix).
  r = cli.run({"prefetch", "cache/val/", "--wait", "--json"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_TRUE(contains(r.out, R"("objects_done":5)")) << r;
  r = cli.run({"ls", "cache", "--cached", "-r", "--summary", "--json"});
  EXPECT_TRUE(contains(r.out, R"("objects":17,)")) << r;
  EXPECT_EQ(cli.run({"prefetch", "cache", "--prefix", "a", "--template", "b"}).code, kUsage);
  EXPECT_EQ(cli.run({"prefetch", "cache", "--list", cli.dir() + "/no-such-list"}).code, kUsage);
  EXPECT_EQ(cli.run({"prefetch", "nosuch", "--wait"}).code, kNotFound);

  // The cached objects are served with the backend gone.
  moto->stop();
  r = cli.run({"cat", "cache/train-0003.tar"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_EQ(difference(objects["train-0003.tar"], r.out), "");

  // Evict a prefix, then everything; the cache empties, the bucket stays.
  r = cli.run({"evict", "cache", "--prefix", "val/", "--json"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_TRUE(contains(r.out, R"("evicted":5)")) << r;
  r = cli.run({"evict", "s3://cache", "train-0000.tar", "train-0001.tar", "--json"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_TRUE(contains(r.out, R"("evicted":2)")) << r;
  r = cli.run({"evict", "cache", "--json"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_TRUE(contains(r.out, R"("evicted":10)")) << r;
  r = cli.run({"ls", "cache", "--cached", "-r", "--summary", "--json"});
  EXPECT_TRUE(contains(r.out, R"("objects":0)")) << r;
  EXPECT_EQ(cli.run({"evict", "cache", "--prefix", "x", "--forget"}).code, kUsage);
  ASSERT_OK(cluster->client().create_bucket("local"));
  r = cli.run({"evict", "local"});
  EXPECT_EQ(r.code, kUsage) << "local buckets cannot be evicted: " << r;
}

}  // namespace
}  // namespace silo::integration
