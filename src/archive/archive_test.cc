// The tar index against archives written by GNU tar in its three formats (ustar, gnu, pax),
// by our own writer, and against truncated, corrupt and randomly mutated ones; member
// selection by key and pattern.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "archive/members.h"
#include "archive/tar_reader.h"
#include "archive/tar_writer.h"

namespace silo::archive {
namespace {

namespace fs = std::filesystem;

Result<wire::ArchiveIndex> index_of(const std::string& bytes) { return index_tar(read_bytes(bytes), bytes.size()); }

std::string member_bytes(const std::string& archive, const wire::ArchiveMember& m) {
  return archive.substr(m.offset(), m.size());
}

// Files to archive: name -> bytes. A long directory and file name (past ustar's 100 and
// 155 bytes), an empty file, one of exactly one block, one past several blocks.
std::map<std::string, std::string> sample_files() {
  const std::string long_dir = std::string(120, 'd');
  return {{"0001.jpg", std::string(1000, 'j')},
          {"0001.cls", "7"},
          {"0002.jpg", std::string(512, 'k')},
          {"0002.cls", ""},
          {long_dir + "/" + std::string(130, 'n') + ".txt", "long"},
          {"dir/0003.a.b.jpg", std::string(5000, 'x')}};
}

// The archive GNU tar writes of `files` in `format` (ustar, gnu or pax).
std::string gnu_tar(const std::map<std::string, std::string>& files, const std::string& format) {
  const fs::path dir = fs::temp_directory_path() / ("silo-tar-" + std::to_string(::getpid()) + "-" + format);
  fs::remove_all(dir);
  std::string list;
  for (const auto& [name, bytes] : files) {
    fs::create_directories((dir / name).parent_path());
    std::ofstream(dir / name, std::ios::binary) << bytes;
    list += " '" + name + "'";
  }
  const std::string out = (dir / "out.tar").string();
  const std::string command =
      "cd '" + dir.string() + "' && tar --format=" + format + " -cf out.tar --sort=name" + list + " 2>/dev/null";
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  std::ifstream in(out, std::ios::binary);
  std::stringstream read;
  read << in.rdbuf();
  fs::remove_all(dir);
  return read.str();
}

TEST(TarIndexTest, GnuTarArchivesOfEveryFormatIndexEachFileAtItsExactOffset) {
  const auto files = sample_files();
  for (const std::string format : {"gnu", "pax", "ustar"}) {
    SCOPED_TRACE(format);
    auto input = files;
    // ustar cannot hold a file name part past 100 bytes.
    if (format == "ustar") input.erase(std::string(120, 'd') + "/" + std::string(130, 'n') + ".txt");
    const std::string archive = gnu_tar(input, format);
    ASSERT_FALSE(archive.empty());
    auto index = index_of(archive);
    ASSERT_TRUE(index) << index.status();
    EXPECT_EQ(index->format(), wire::ARCHIVE_FORMAT_TAR);
    std::map<std::string, std::string> found;
    for (const auto& m : index->members()) found[m.name()] = member_bytes(archive, m);
    EXPECT_EQ(found, input);  // directories are not members
  }
}

TEST(TarIndexTest, OurWriterRoundTripsLongNamesAndEmptyMembers) {
  std::string archive;
  const std::vector<std::pair<std::string, std::string>> members = {
      {"a.txt", "hello"}, {std::string(300, 'p') + "/x.bin", std::string(2000, 'z')}, {"empty", ""}};
  for (const auto& [name, bytes] : members) {
    const std::string header = tar_header(name, bytes.size(), 1'700'000'000);
    archive += header + bytes + tar_padding(bytes.size());
    EXPECT_EQ(tar_member_bytes(name, bytes.size()), header.size() + bytes.size() + tar_padding(bytes.size()).size());
  }
  archive += tar_end();
  auto index = index_of(archive);
  ASSERT_TRUE(index) << index.status();
  ASSERT_EQ(index->members_size(), 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(index->members(i).name(), members[static_cast<size_t>(i)].first);
    EXPECT_EQ(member_bytes(archive, index->members(i)), members[static_cast<size_t>(i)].second);
  }
  // GNU tar reads what we write.
  const fs::path path = fs::temp_directory_path() / ("silo-ours-" + std::to_string(::getpid()) + ".tar");
  std::ofstream(path, std::ios::binary) << archive;
  EXPECT_EQ(std::system(("tar -tf '" + path.string() + "' >/dev/null").c_str()), 0);
  fs::remove(path);
}

TEST(TarIndexTest, TruncatedCorruptAndForeignBytesAreClearErrors) {
  const std::string archive = gnu_tar(sample_files(), "pax");
  auto whole = index_of(archive);
  ASSERT_TRUE(whole);
  // Cut inside a member's data: truncated, never a shorter member.
  const auto& last = whole->members(whole->members_size() - 1);
  const auto cut = index_of(archive.substr(0, last.offset() + last.size() / 2));
  ASSERT_FALSE(cut);
  EXPECT_EQ(cut.status().reason(), "CorruptArchive");
  EXPECT_NE(cut.status().message().find("truncated"), std::string::npos) << cut.status();
  // Cut inside a header, or exactly between two members: truncated either way.
  EXPECT_EQ(index_of(archive.substr(0, 700)).status().reason(), "CorruptArchive");
  const auto& first = whole->members(0);
  const auto at_boundary = index_of(archive.substr(0, (first.offset() + first.size() + 511) / 512 * 512));
  EXPECT_EQ(at_boundary.status().reason(), "CorruptArchive");
  EXPECT_NE(at_boundary.status().message().find("end-of-archive"), std::string::npos) << at_boundary.status();
  // A flipped byte in a later header.
  std::string flipped = archive;
  flipped[whole->members(1).offset() - 512 + 10] ^= 0x20;
  EXPECT_EQ(index_of(flipped).status().reason(), "CorruptArchive");
  // Not a tar at all.
  EXPECT_EQ(index_of(std::string(4096, 'x')).status().reason(), "NotAnArchive");
  EXPECT_EQ(index_of("short").status().reason(), "NotAnArchive");
  // Only the end blocks: an empty archive.
  auto empty = index_of(tar_end());
  ASSERT_TRUE(empty) << empty.status();
  EXPECT_EQ(empty->members_size(), 0);
}

// Random mutations of a real archive: the index never crashes, never hangs, and every
// member it reports lies inside the bytes.
TEST(TarIndexTest, MutatedArchivesNeverYieldAMemberOutsideTheBytes) {
  const std::string archive = gnu_tar(sample_files(), "pax");
  ASSERT_GT(archive.size(), 10000u);
  std::mt19937_64 random(20261125);
  size_t indexed = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string mutated = archive;
    const int edits = 1 + static_cast<int>(random() % 8);
    for (int e = 0; e < edits; ++e) {
      const size_t at = random() % mutated.size();
      switch (random() % 4) {
        case 0: mutated[at] = static_cast<char>(random()); break;
        case 1: mutated[at] = static_cast<char>('0' + random() % 10); break;
        case 2: mutated.resize(at); break;
        default: mutated.insert(at, std::string(random() % 600, static_cast<char>(random())));
      }
      if (mutated.empty()) break;
    }
    const auto index = index_of(mutated);
    if (!index) continue;
    ++indexed;
    for (const auto& m : index->members()) {
      ASSERT_LE(m.offset() + m.size(), mutated.size()) << "round " << round;
    }
  }
  EXPECT_GT(indexed, 100u) << "mutations that keep the archive readable were tried too";
}

TEST(MembersTest, FindSplitAndSelect) {
  wire::ArchiveIndex index;
  for (const char* name : {"s1.jpg", "s1.cls", "s1.meta.json", "dir/s1.jpg", "s2.jpg", "s1.jpg"}) {
    auto* m = index.add_members();
    m->set_name(name);
    m->set_offset(static_cast<uint64_t>(index.members_size()) * 512);
  }
  EXPECT_EQ(find_member(index, "s1.jpg")->offset(), 6u * 512) << "the last of a name stored twice";
  EXPECT_EQ(find_member(index, "nope"), nullptr);
  EXPECT_EQ(split_sample_key("dir/a.b.jpg"), std::make_pair(std::string_view("dir/a"), std::string_view("b.jpg")));
  EXPECT_EQ(split_sample_key("x.y/noext"), std::make_pair(std::string_view("x.y/noext"), std::string_view()));

  const auto names = [&](SelectMode mode, std::string_view pattern) {
    std::vector<std::string> out;
    auto selected = select_members(index, mode, pattern);
    EXPECT_TRUE(selected) << selected.status();
    if (selected) {
      for (const auto* m : *selected) out.push_back(m->name());
    }
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(names(SelectMode::kWdsKey, "s1"), (V{"s1.jpg", "s1.cls", "s1.meta.json", "s1.jpg"}));
  EXPECT_EQ(names(SelectMode::kWdsKey, "dir/s1"), (V{"dir/s1.jpg"}));
  EXPECT_EQ(names(SelectMode::kPrefix, "dir/"), (V{"dir/s1.jpg"}));
  EXPECT_EQ(names(SelectMode::kSuffix, ".cls"), (V{"s1.cls"}));
  EXPECT_EQ(names(SelectMode::kSubstr, "meta"), (V{"s1.meta.json"}));
  EXPECT_EQ(names(SelectMode::kRegexp, "s[12]\\.jpg"), (V{"s1.jpg", "s2.jpg", "s1.jpg"}));
  EXPECT_EQ(select_members(index, SelectMode::kRegexp, "(").status().code(), Code::kInvalidArgument);
  EXPECT_FALSE(parse_select_mode("glob"));
  EXPECT_EQ(*parse_select_mode("wdskey"), SelectMode::kWdsKey);
  EXPECT_EQ(format_of_name("train-0001.tar"), wire::ARCHIVE_FORMAT_TAR);
  EXPECT_EQ(format_of_name("photo.jpg"), std::nullopt);
}

}  // namespace
}  // namespace silo::archive
