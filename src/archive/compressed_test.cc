// Compressed archives (compressed.h): tgz, tar.lz4 and zip written by libarchive and by
// the system's tar, lz4 and zip; their index against the tar index of the decompressed
// bytes, member reads and sub-ranges, and truncated, corrupt and randomly mutated input.
#include "archive/compressed.h"

#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>
#include <zlib.h>
// libarchive's format codes are macros that shadow wire::ARCHIVE_FORMAT_TAR and _ZIP.
#undef ARCHIVE_FORMAT_TAR
#undef ARCHIVE_FORMAT_ZIP

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "archive/gzip_writer.h"
#include "archive/members.h"
#include "archive/tar_reader.h"
#include "archive/tar_writer.h"

namespace silo::archive {
namespace {

namespace fs = std::filesystem;

struct File {
  std::string name;
  std::string bytes;
};

enum class Kind { kTgz, kLz4, kZipDeflate, kZipStored, kZipMixed };

std::string random_bytes(size_t n, uint64_t seed) {
  std::mt19937_64 random(seed);
  std::string out(n, '\0');
  for (char& c : out) c = static_cast<char>(random());
  return out;
}

// Regular files of several shapes: empty, one byte, a long name (PAX), compressible, and
// incompressible ones past the read chunk (kMaxChunkBytes) and the input chunk.
std::vector<File> sample_files() {
  return {{"0001.jpg", random_bytes(1000, 1)},
          {"0001.cls", "7"},
          {"0002.cls", ""},
          {std::string(120, 'd') + "/" + std::string(130, 'n') + ".txt", "long"},
          {"dir/0003.a.b.jpg", std::string(700'000, 'x') + "end"},
          {"0004.bin", random_bytes(600'000, 4)},
          {"0005.txt", "last"}};
}

la_ssize_t append_to_string(struct archive*, void* out, const void* buffer, size_t length) {
  static_cast<std::string*>(out)->append(static_cast<const char*>(buffer), length);
  return static_cast<la_ssize_t>(length);
}

// The archive libarchive writes of `files`, with a directory and a symbolic link (which
// are not members) after the first file.
std::string write_archive(Kind kind, const std::vector<File>& files) {
  struct archive* a = archive_write_new();
  const bool is_zip = kind != Kind::kTgz && kind != Kind::kLz4;
  if (is_zip) {
    EXPECT_EQ(archive_write_set_format_zip(a), ARCHIVE_OK);
  } else {
    EXPECT_EQ(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
    EXPECT_EQ(kind == Kind::kTgz ? archive_write_add_filter_gzip(a) : archive_write_add_filter_lz4(a), ARCHIVE_OK);
  }
  archive_write_set_bytes_in_last_block(a, 1);
  std::string out;
  EXPECT_EQ(archive_write_open2(a, &out, nullptr, &append_to_string, nullptr, nullptr), ARCHIVE_OK)
      << archive_error_string(a);
  const auto add = [&](const std::string& name, mode_t type, const std::string& bytes, int index) {
    if (kind == Kind::kZipStored || (kind == Kind::kZipMixed && index % 2 == 1)) {
      archive_write_zip_set_compression_store(a);
    } else if (is_zip) {
      archive_write_zip_set_compression_deflate(a);
    }
    struct archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, name.c_str());
    archive_entry_set_filetype(e, type);
    archive_entry_set_perm(e, 0644);
    if (type == AE_IFLNK) archive_entry_set_symlink(e, "0001.jpg");
    archive_entry_set_size(e, static_cast<la_int64_t>(bytes.size()));
    EXPECT_EQ(archive_write_header(a, e), ARCHIVE_OK) << archive_error_string(a);
    if (!bytes.empty()) {
      EXPECT_EQ(archive_write_data(a, bytes.data(), bytes.size()), static_cast<la_ssize_t>(bytes.size()));
    }
    archive_entry_free(e);
  };
  for (size_t i = 0; i < files.size(); ++i) {
    add(files[i].name, AE_IFREG, files[i].bytes, static_cast<int>(i));
    if (i == 0) {
      add("somedir/", AE_IFDIR, "", 0);
      add("link.jpg", AE_IFLNK, "", 0);
    }
  }
  EXPECT_EQ(archive_write_close(a), ARCHIVE_OK);
  archive_write_free(a);
  return out;
}

// The decompressed bytes of a gzip or LZ4 stream, by libarchive's reader.
std::string decompress(const std::string& bytes) {
  struct archive* a = archive_read_new();
  archive_read_support_filter_all(a);
  archive_read_support_format_raw(a);
  EXPECT_EQ(archive_read_open_memory(a, bytes.data(), bytes.size()), ARCHIVE_OK);
  struct archive_entry* e = nullptr;
  EXPECT_EQ(archive_read_next_header(a, &e), ARCHIVE_OK);
  std::string out;
  char buffer[65536];
  la_ssize_t n = 0;
  while ((n = archive_read_data(a, buffer, sizeof buffer)) > 0) out.append(buffer, static_cast<size_t>(n));
  archive_read_free(a);
  return out;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// What the system's tools make of `files`: `command` runs in a folder holding them and
// writes out.bin.
std::string system_archive(const std::vector<File>& files, const std::string& command) {
  const fs::path dir = fs::temp_directory_path() / ("silo-compressed-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "in");
  for (const auto& f : files) {
    fs::create_directories((dir / "in" / f.name).parent_path());
    std::ofstream(dir / "in" / f.name, std::ios::binary) << f.bytes;
  }
  const std::string full = "cd '" + dir.string() + "/in' && (" + command + ") >/dev/null 2>&1";
  EXPECT_EQ(std::system(full.c_str()), 0) << full;
  std::string out = read_file(dir / "out.bin");
  fs::remove_all(dir);
  return out;
}

Result<wire::ArchiveIndex> index_of(wire::ArchiveFormat format, const std::string& bytes) {
  return index_archive(format, read_bytes(bytes), bytes.size());
}

// A member's bytes in `range` through read_member(), checking the chunk bound.
Result<std::string> member_bytes(wire::ArchiveFormat format, const std::string& archive,
                                 const wire::ArchiveMember& member, MemberRange range) {
  std::string out;
  const Status s = read_member(format, read_bytes(archive), archive.size(), member, range,
                               [&out](std::span<const char> bytes) -> Status {
                                 EXPECT_LE(bytes.size(), kMaxChunkBytes);
                                 out.append(bytes.data(), bytes.size());
                                 return Status::ok();
                               });
  if (!s.is_ok()) return s;
  return out;
}

Result<std::string> whole_member(wire::ArchiveFormat format, const std::string& archive,
                                 const wire::ArchiveMember& member) {
  return member_bytes(format, archive, member, {.offset = 0, .length = member.size()});
}

// Every member of `index` is one of `files`, in order, and reads back whole and in parts.
void expect_members(wire::ArchiveFormat format, const std::string& archive, const wire::ArchiveIndex& index,
                    const std::vector<File>& files) {
  ASSERT_EQ(index.format(), format);
  ASSERT_EQ(index.members_size(), static_cast<int>(files.size()));
  for (size_t i = 0; i < files.size(); ++i) {
    const wire::ArchiveMember& m = index.members(static_cast<int>(i));
    const std::string& expected = files[i].bytes;
    EXPECT_EQ(m.name(), files[i].name);
    EXPECT_EQ(m.size(), expected.size()) << m.name();
    auto whole = whole_member(format, archive, m);
    ASSERT_TRUE(whole) << m.name() << ": " << whole.status();
    EXPECT_TRUE(*whole == expected) << m.name();
    const uint64_t size = expected.size();
    for (const MemberRange range : {MemberRange{0, std::min<uint64_t>(size, 1)}, MemberRange{size / 3, size / 2},
                                    MemberRange{size, 0}, MemberRange{size > 0 ? size - 1 : 0, size > 0 ? 1u : 0u}}) {
      auto part = member_bytes(format, archive, m, range);
      ASSERT_TRUE(part) << m.name() << " " << range.offset << "+" << range.length << ": " << part.status();
      EXPECT_TRUE(*part == expected.substr(range.offset, range.length)) << m.name() << " " << range.offset;
    }
    EXPECT_EQ(member_bytes(format, archive, m, {size, 1}).status().code(), Code::kOutOfRange);
  }
}

TEST(CompressedTarTest, IndexMatchesTheTarIndexOfTheDecompressedBytes) {
  const std::vector<File> files = sample_files();
  for (const Kind kind : {Kind::kTgz, Kind::kLz4}) {
    const auto format = kind == Kind::kTgz ? wire::ARCHIVE_FORMAT_TGZ : wire::ARCHIVE_FORMAT_TAR_LZ4;
    const std::string archive = write_archive(kind, files);
    EXPECT_EQ(sniff_format(archive), format);
    auto index = index_of(format, archive);
    ASSERT_TRUE(index) << index.status();
    const std::string tar = decompress(archive);
    auto plain = index_tar(read_bytes(tar), tar.size());
    ASSERT_TRUE(plain) << plain.status();
    ASSERT_EQ(index->members_size(), plain->members_size());
    for (int i = 0; i < plain->members_size(); ++i) {
      EXPECT_EQ(index->members(i).offset(), plain->members(i).offset()) << "exact offsets in the decompressed stream";
      EXPECT_EQ(index->members(i).size(), plain->members(i).size());
      EXPECT_EQ(tar.substr(index->members(i).offset(), files[i].bytes.size()), files[i].bytes);
    }
    expect_members(format, archive, *index, files);
  }
}

TEST(GzipWriterTest, ATarWrittenInPiecesReadsBackAsATgzAndIsTheSameEveryTime) {
  const std::vector<File> files = sample_files();
  std::string tar;
  for (const File& f : files) tar += tar_header(f.name, f.bytes.size(), 0) + f.bytes + tar_padding(f.bytes.size());
  tar += tar_end();
  // In uneven pieces, as a batch stream delivers them.
  const auto compress = [&tar](size_t piece) {
    GzipWriter gzip;
    std::string out;
    for (size_t at = 0; at < tar.size(); at += piece) {
      EXPECT_TRUE(gzip.write(std::span<const char>(tar).subspan(at, std::min(piece, tar.size() - at)), out).is_ok());
    }
    EXPECT_TRUE(gzip.finish(out).is_ok());
    EXPECT_FALSE(gzip.write(std::span<const char>(tar).first(1), out).is_ok()) << "nothing after finish";
    return out;
  };
  const std::string tgz = compress(7'777);
  EXPECT_EQ(compress(1 << 20), tgz) << "the same bytes whatever the pieces";
  EXPECT_LT(tgz.size(), tar.size());
  EXPECT_EQ(sniff_format(tgz), wire::ARCHIVE_FORMAT_TGZ);
  EXPECT_TRUE(decompress(tgz) == tar);
  auto index = index_of(wire::ARCHIVE_FORMAT_TGZ, tgz);
  ASSERT_TRUE(index) << index.status();
  expect_members(wire::ARCHIVE_FORMAT_TGZ, tgz, *index, files);

  GzipWriter empty;
  std::string nothing;
  ASSERT_TRUE(empty.finish(nothing).is_ok());
  EXPECT_EQ(sniff_format(nothing), wire::ARCHIVE_FORMAT_TGZ) << "an empty stream is still one gzip member";
}

TEST(CompressedTarTest, SystemTarGzipAndLz4) {
  const std::vector<File> files = sample_files();
  const std::string tgz = system_archive(files, "tar --format=gnu -czf ../out.bin --sort=name *");
  const std::string lz4 = system_archive(files, "tar --format=pax -cf - --sort=name * | lz4 -q > ../out.bin");
  // Concatenated gzip members are one stream (gzip(1) reads them so).
  const std::string two_members =
      system_archive(files, "tar -cf ../t.tar --sort=name * && head -c 100000 ../t.tar | gzip > ../out.bin && "
                            "tail -c +100001 ../t.tar | gzip >> ../out.bin");
  // GNU tar sorts by name: match the order.
  std::vector<File> sorted = files;
  std::sort(sorted.begin(), sorted.end(), [](const File& a, const File& b) { return a.name < b.name; });
  for (const auto& [format, archive] :
       {std::pair{wire::ARCHIVE_FORMAT_TGZ, tgz}, {wire::ARCHIVE_FORMAT_TAR_LZ4, lz4}, {wire::ARCHIVE_FORMAT_TGZ, two_members}}) {
    EXPECT_EQ(sniff_format(archive), format);
    auto index = index_of(format, archive);
    ASSERT_TRUE(index) << index.status();
    expect_members(format, archive, *index, sorted);
  }
}

TEST(ZipTest, LibarchiveZipsOfDeflatedAndStoredMembers) {
  const std::vector<File> files = sample_files();
  for (const Kind kind : {Kind::kZipDeflate, Kind::kZipStored, Kind::kZipMixed}) {
    const std::string archive = write_archive(kind, files);
    EXPECT_EQ(sniff_format(archive), wire::ARCHIVE_FORMAT_ZIP);
    auto index = index_of(wire::ARCHIVE_FORMAT_ZIP, archive);
    ASSERT_TRUE(index) << index.status();
    expect_members(wire::ARCHIVE_FORMAT_ZIP, archive, *index, files);
    for (int i = 0; i < index->members_size(); ++i) {
      const wire::ArchiveMember& m = index->members(i);
      EXPECT_EQ(archive.substr(m.offset(), 4), std::string("PK\x03\x04", 4)) << "the local header";
      const std::string& bytes = files[static_cast<size_t>(i)].bytes;
      EXPECT_EQ(m.crc32(), ::crc32(0, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size())));
      const bool is_stored = kind == Kind::kZipStored || (kind == Kind::kZipMixed && i % 2 == 1);
      EXPECT_EQ(m.method(), is_stored ? 0u : 8u) << m.name();
      if (is_stored) {
        EXPECT_EQ(m.compressed_size(), m.size());
      }
    }
  }
}

TEST(ZipTest, InfoZipAndZip64) {
  const std::vector<File> files = sample_files();
  std::vector<File> sorted = files;
  std::sort(sorted.begin(), sorted.end(), [](const File& a, const File& b) { return a.name < b.name; });
  std::string list;
  for (const auto& f : sorted) list += " '" + f.name + "'";
  // -D: no directory entries; -fz: zip64 records whatever the sizes; stdin-to-stdout.
  for (const std::string flags : {"-D", "-D -fz", "-D -0"}) {
    const std::string archive = system_archive(files, "zip -q " + flags + " ../out.bin" + list);
    auto index = index_of(wire::ARCHIVE_FORMAT_ZIP, archive);
    ASSERT_TRUE(index) << flags << ": " << index.status();
    expect_members(wire::ARCHIVE_FORMAT_ZIP, archive, *index, sorted);
  }
  // Zip64 end records and zip64 extra fields in the central directory: Python's zipfile
  // writes them past 65,535 entries or 4 GiB, here past limits lowered for the test.
  const std::string zip64 = system_archive(
      {}, "python3 -c \"import zipfile\nzipfile.ZIP64_LIMIT = 100\nzipfile.ZIP_FILECOUNT_LIMIT = 2\n"
          "with zipfile.ZipFile('../out.bin', 'w', zipfile.ZIP_DEFLATED) as z:\n"
          "  [z.writestr('m%d' % i, str(i) * (50 + 100 * i)) for i in range(5)]\n"
          "  z.writestr(zipfile.ZipInfo('dir/'), '')\"");
  ASSERT_NE(zip64.find(std::string_view("PK\x06\x06", 4)), std::string::npos) << "a zip64 end record";
  auto index = index_of(wire::ARCHIVE_FORMAT_ZIP, zip64);
  ASSERT_TRUE(index) << index.status();
  std::vector<File> expected;
  for (int i = 0; i < 5; ++i) expected.push_back({"m" + std::to_string(i), std::string(50 + 100 * i, char('0' + i))});
  expect_members(wire::ARCHIVE_FORMAT_ZIP, zip64, *index, expected);
}

TEST(CompressedTest, FormatsByNameAndByMagic) {
  EXPECT_EQ(format_of_name("a.tar"), wire::ARCHIVE_FORMAT_TAR);
  EXPECT_EQ(format_of_name("a.tgz"), wire::ARCHIVE_FORMAT_TGZ);
  EXPECT_EQ(format_of_name("a.tar.gz"), wire::ARCHIVE_FORMAT_TGZ);
  EXPECT_EQ(format_of_name("a.tar.lz4"), wire::ARCHIVE_FORMAT_TAR_LZ4);
  EXPECT_EQ(format_of_name("a.zip"), wire::ARCHIVE_FORMAT_ZIP);
  EXPECT_EQ(format_of_name("a.gz"), std::nullopt);
  EXPECT_EQ(format_of_name("a.lz4"), std::nullopt);
  EXPECT_EQ(format_name(wire::ARCHIVE_FORMAT_TAR_LZ4), "tar.lz4");
  EXPECT_EQ(sniff_format(std::string_view("\x1f\x8b\x08", 3)), wire::ARCHIVE_FORMAT_TGZ);
  EXPECT_EQ(sniff_format(std::string_view("\x04\x22\x4d\x18", 4)), wire::ARCHIVE_FORMAT_TAR_LZ4);
  EXPECT_EQ(sniff_format(std::string_view("PK\x05\x06", 4)), wire::ARCHIVE_FORMAT_ZIP);
  EXPECT_EQ(sniff_format("PK"), wire::ARCHIVE_FORMAT_TAR);
  EXPECT_EQ(sniff_format(""), wire::ARCHIVE_FORMAT_TAR);
  const std::string zip = write_archive(Kind::kZipDeflate, {{"a", "b"}});
  EXPECT_EQ(*sniff_format(read_bytes(zip), zip.size()), wire::ARCHIVE_FORMAT_ZIP);
  EXPECT_EQ(*sniff_format(read_bytes(""), 0), wire::ARCHIVE_FORMAT_TAR);
  // An empty zip is an archive without members.
  const std::string empty_zip = std::string("PK\x05\x06", 4) + std::string(18, '\0');
  auto empty = index_of(wire::ARCHIVE_FORMAT_ZIP, empty_zip);
  ASSERT_TRUE(empty) << empty.status();
  EXPECT_EQ(empty->members_size(), 0);
}

TEST(CompressedTest, TruncatedCorruptAndForeignBytesAreClearErrors) {
  const std::vector<File> files = sample_files();
  for (const Kind kind : {Kind::kTgz, Kind::kLz4}) {
    const auto format = kind == Kind::kTgz ? wire::ARCHIVE_FORMAT_TGZ : wire::ARCHIVE_FORMAT_TAR_LZ4;
    const std::string archive = write_archive(kind, files);
    for (const size_t cut : {size_t{1}, size_t{3}, size_t{20}, archive.size() / 2, archive.size() - 4,
                             archive.size() - 1}) {
      const auto index = index_of(format, archive.substr(0, cut));
      ASSERT_FALSE(index) << cut;
      EXPECT_EQ(index.status().code(), Code::kInvalidArgument);
      const size_t magic_bytes = kind == Kind::kTgz ? 2 : 4;
      EXPECT_EQ(index.status().reason(), cut < magic_bytes ? "NotAnArchive" : "CorruptArchive")
          << cut << ": " << index.status();
    }
    EXPECT_EQ(index_of(format, std::string(4096, 'x')).status().reason(), "NotAnArchive");
    EXPECT_EQ(index_of(format, "").status().reason(), "NotAnArchive");
  }
  // A flipped bit in a gzip trailer's CRC-32 or length (which libarchive 3.6 ignores) and
  // in the middle of the compressed data.
  const std::string tgz = write_archive(Kind::kTgz, files);
  for (const size_t at : {tgz.size() - 8, tgz.size() - 2, tgz.size() / 2}) {
    std::string flipped = tgz;
    flipped[at] ^= 0x10;
    EXPECT_EQ(index_of(wire::ARCHIVE_FORMAT_TGZ, flipped).status().reason(), "CorruptArchive") << at;
  }
  // A member's read past what the stream holds.
  auto index = index_of(wire::ARCHIVE_FORMAT_TGZ, tgz);
  ASSERT_TRUE(index);
  wire::ArchiveMember beyond = index->members(0);
  beyond.set_offset(100'000'000);
  EXPECT_EQ(whole_member(wire::ARCHIVE_FORMAT_TGZ, tgz, beyond).status().reason(), "CorruptArchive");

  const std::string zip = write_archive(Kind::kZipMixed, files);
  EXPECT_EQ(index_of(wire::ARCHIVE_FORMAT_ZIP, zip.substr(0, zip.size() - 10)).status().reason(), "CorruptArchive");
  EXPECT_EQ(index_of(wire::ARCHIVE_FORMAT_ZIP, zip.substr(0, 100)).status().reason(), "CorruptArchive");
  EXPECT_EQ(index_of(wire::ARCHIVE_FORMAT_ZIP, std::string(100, 'x')).status().reason(), "NotAnArchive");
  EXPECT_EQ(index_of(wire::ARCHIVE_FORMAT_ZIP, tgz).status().reason(), "NotAnArchive");
  auto zip_index = index_of(wire::ARCHIVE_FORMAT_ZIP, zip);
  ASSERT_TRUE(zip_index);
  for (const int i : {0, 1}) {  // deflated, then stored
    wire::ArchiveMember m = zip_index->members(i);
    m.set_crc32(m.crc32() ^ 1);
    const auto whole = whole_member(wire::ARCHIVE_FORMAT_ZIP, zip, m);
    EXPECT_EQ(whole.status().reason(), "CorruptArchive") << i;
    EXPECT_NE(whole.status().message().find("CRC-32"), std::string::npos) << whole.status();
    EXPECT_TRUE(member_bytes(wire::ARCHIVE_FORMAT_ZIP, zip, m, {0, m.size() / 2})) << "a part is not checked";
    m.set_method(12);
    EXPECT_EQ(whole_member(wire::ARCHIVE_FORMAT_ZIP, zip, m).status().code(), Code::kUnimplemented);
  }
  // A zip bomb: a deflated member that inflates past the size its directory gives stops there.
  const std::string bomb = write_archive(Kind::kZipDeflate, {{"zeros", std::string(4 << 20, '\0')}});
  auto bomb_index = index_of(wire::ARCHIVE_FORMAT_ZIP, bomb);
  ASSERT_TRUE(bomb_index);
  wire::ArchiveMember small = bomb_index->members(0);
  small.set_size(1000);
  const auto bombed = whole_member(wire::ARCHIVE_FORMAT_ZIP, bomb, small);
  EXPECT_EQ(bombed.status().reason(), "CorruptArchive") << bombed.status();
  // A gzip bomb: the index build stops past 200 times the compressed size (64 MiB floor).
  const std::string gzip_bomb = write_archive(Kind::kTgz, {{"zeros", std::string(80 << 20, '\0')}});
  ASSERT_LT(gzip_bomb.size(), 200'000u);
  const auto gzip_bombed = index_of(wire::ARCHIVE_FORMAT_TGZ, gzip_bomb);
  EXPECT_EQ(gzip_bombed.status().reason(), "CorruptArchive");
  EXPECT_NE(gzip_bombed.status().message().find("decompresses to more than"), std::string::npos)
      << gzip_bombed.status();
  // A member's local header that is not one.
  wire::ArchiveMember moved = zip_index->members(2);
  moved.set_offset(moved.offset() + 1);
  EXPECT_EQ(whole_member(wire::ARCHIVE_FORMAT_ZIP, zip, moved).status().reason(), "CorruptArchive");
}

// A sink error stops the read and comes back as it is.
TEST(CompressedTest, SinkErrorsStopTheRead) {
  const std::string tgz = write_archive(Kind::kTgz, sample_files());
  auto index = index_of(wire::ARCHIVE_FORMAT_TGZ, tgz);
  ASSERT_TRUE(index);
  const wire::ArchiveMember& big = index->members(4);
  int calls = 0;
  const Status s = read_member(wire::ARCHIVE_FORMAT_TGZ, read_bytes(tgz), tgz.size(), big, {0, big.size()},
                               [&calls](std::span<const char>) {
                                 ++calls;
                                 return Status::unavailable("client went away");
                               });
  EXPECT_EQ(s.code(), Code::kUnavailable);
  EXPECT_EQ(calls, 1);
}

// Random mutations: indexing and reading never crash or hang, and a read that succeeds
// gives exactly the bytes asked for, each member of a zip lying inside the object.
TEST(CompressedTest, MutatedArchivesNeverCrashOrGiveMoreBytesThanAsked) {
  const std::vector<File> files = {{"a.jpg", random_bytes(3000, 7)},
                                   {"a.cls", "1"},
                                   {"b.txt", std::string(5000, 'b')},
                                   {"c/d.bin", random_bytes(700, 8)}};
  std::mt19937_64 random(20261126);
  for (const Kind kind : {Kind::kTgz, Kind::kLz4, Kind::kZipMixed}) {
    const auto format = kind == Kind::kTgz   ? wire::ARCHIVE_FORMAT_TGZ
                        : kind == Kind::kLz4 ? wire::ARCHIVE_FORMAT_TAR_LZ4
                                             : wire::ARCHIVE_FORMAT_ZIP;
    const std::string archive = write_archive(kind, files);
    const auto original = index_of(format, archive);
    ASSERT_TRUE(original) << original.status();
    size_t indexed = 0, read_whole = 0;
    for (int round = 0; round < 2500; ++round) {
      std::string mutated = archive;
      const int edits = 1 + static_cast<int>(random() % 4);
      for (int e = 0; e < edits && !mutated.empty(); ++e) {
        const size_t at = random() % mutated.size();
        switch (random() % 4) {
          case 0: mutated[at] = static_cast<char>(random()); break;
          case 1: mutated[at] = static_cast<char>(mutated[at] ^ (1 << (random() % 8))); break;
          case 2: mutated.resize(at); break;
          default: mutated.insert(at, std::string(random() % 300, static_cast<char>(random())));
        }
      }
      // Reads go through the mutated bytes' own index, or the original's when they have
      // none (a read must hold up against bytes that do not match its index).
      const auto own = index_of(format, mutated);
      if (own) {
        ++indexed;
      } else {
        const Status& s = own.status();
        EXPECT_TRUE(s.reason() == "CorruptArchive" || s.reason() == "NotAnArchive") << "round " << round << ": " << s;
      }
      const wire::ArchiveIndex& index = own ? *own : *original;
      for (const auto& m : index.members()) {
        if (format == wire::ARCHIVE_FORMAT_ZIP && own) {
          ASSERT_LE(m.offset() + m.compressed_size(), mutated.size());
        }
        const auto bytes = whole_member(format, mutated, m);
        if (!bytes) {
          EXPECT_TRUE(bytes.status().reason() == "CorruptArchive" || bytes.status().reason() == "NotAnArchive" ||
                      bytes.status().code() == Code::kUnimplemented)
              << bytes.status();
          continue;
        }
        ++read_whole;
        ASSERT_EQ(bytes->size(), m.size()) << "round " << round;
      }
    }
    EXPECT_GT(indexed, format == wire::ARCHIVE_FORMAT_ZIP ? 100u : 0u) << format_name(format);
    EXPECT_GT(read_whole, 500u) << format_name(format) << ": mutations that keep members readable were tried too";
  }
}

}  // namespace
}  // namespace silo::archive
