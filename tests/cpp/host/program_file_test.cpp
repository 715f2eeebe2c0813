// Program files and the executable cache (host/program_file.h,
// host/executable_cache.h): a file reads back as written; any damaged,
// truncated, crafted or foreign file is an InvalidFile error naming it; a
// cache entry is used only when it is this user's and for this program, and
// anything else is compiled again and replaced, with a warning.

#include "common/sha256.h"
#include "host/executable_cache.h"
#include "host/program_file.h"
#include "host/program_key.h"
#include "ir/graph.h"
#include "test_utils.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace popsim {
namespace {

namespace fs = std::filesystem;
using host::FileAccess;
using host::ProgramFile;
using testing::captureError;
using testing::contains;
using testing::f32;

std::string contents(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

void overwrite(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// The file's body with its trailing SHA-256 recomputed: the integrity check
// passes, as it does for anyone who can write the file.
std::string resealed(std::string body) {
  const Sha256 digest = sha256(body);
  return body.append(reinterpret_cast<const char*>(digest.data()), digest.size());
}

std::string withLength(uint64_t length) {
  std::string bytes;
  for (int i = 0; i < 8; ++i)
    bytes.push_back(static_cast<char>((length >> (8 * i)) & 0xff));
  return bytes;
}

// "POPSIMEX", version 2, the three sections and their SHA-256.
std::string container(const std::string& header, const std::string& program,
                      const std::string& model = "") {
  std::string body = std::string("POPSIMEX") + std::string("\x02\x00\x00\x00", 4);
  for (const std::string* section : {&header, &program, &model})
    body += withLength(section->size()) + *section;
  return resealed(body);
}

std::unique_ptr<ir::Graph> doubler() {
  auto graph = std::make_unique<ir::Graph>();
  ir::Value* x = graph->addInput("x", f32({2, 3}));
  graph->addOutput(graph->apply(ir::OpKind::Add, {x, x}));
  return graph;
}

class ProgramFileTest : public ::testing::Test {
protected:
  void SetUp() override {
    directory_ = fs::temp_directory_path() /
                 ("popsim-program-file-" + std::to_string(::getpid()) + "-" +
                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(directory_);
    fs::create_directories(directory_);
    graph_ = doubler();
  }
  void TearDown() override { fs::remove_all(directory_); }

  ProgramFile exampleFile() const {
    ProgramFile file;
    file.key = host::programKey(*graph_, options_);
    file.program = "the program's bytes";
    file.training = false;
    file.call = nlohmann::json{{"leaves", nlohmann::json::array()}};
    file.modelSection = std::string("\x80\x02pickled", 9);
    return file;
  }
  // The header of a file written for exampleFile(), to craft others from.
  nlohmann::json exampleHeader() {
    const fs::path path = directory_ / "example.popsim";
    host::writeProgramFile(path, exampleFile());
    const std::string bytes = contents(path);
    const uint64_t length =
        static_cast<uint8_t>(bytes[12]) | (static_cast<uint8_t>(bytes[13]) << 8);
    return nlohmann::json::parse(bytes.substr(20, length));
  }
  std::string refusal(const std::string& bytes, FileAccess access = FileAccess::Any) {
    const fs::path path = directory_ / "crafted.popsim";
    overwrite(path, bytes);
    const CoreError error = captureError([&] { host::readProgramFile(path, access); });
    EXPECT_EQ(error.kind(), ErrorKind::InvalidFile) << error.what();
    EXPECT_TRUE(contains(error.what(), "'" + path.string() + "'"));
    return error.what();
  }

  fs::path directory_;
  std::unique_ptr<ir::Graph> graph_;
  runtime::CompileOptions options_;
};

TEST(Sha256, IsTheStandardDigest) {
  // FIPS 180-2's example.
  EXPECT_EQ(sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST_F(ProgramFileTest, AFileReadsBackAsWrittenReadableByItsOwnerOnly) {
  const fs::path path = directory_ / "nested" / "model.popsim";
  host::writeProgramFile(path, exampleFile());
  EXPECT_EQ(fs::status(path).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  const ProgramFile read = host::readProgramFile(path, FileAccess::Private);
  EXPECT_EQ(read.program, "the program's bytes");
  EXPECT_EQ(read.training, std::optional<bool>(false));
  EXPECT_EQ(read.call, exampleFile().call);
  EXPECT_EQ(read.modelSection, exampleFile().modelSection);
  EXPECT_EQ(host::keyMismatch(read.key, exampleFile().key), std::nullopt);
  EXPECT_EQ(read.key.digest(), exampleFile().key.digest());
}

TEST_F(ProgramFileTest, DamagedTruncatedAndForeignFilesAreRefusedNamingTheFile) {
  host::writeProgramFile(directory_ / "good.popsim", exampleFile());
  std::string good = contents(directory_ / "good.popsim");
  EXPECT_TRUE(contains(refusal(""), "is not a popsim program file (it does not start with "
                                    "b'POPSIMEX')"));
  EXPECT_TRUE(contains(refusal("POPSIMEX\x02"), "is damaged"));
  EXPECT_TRUE(contains(refusal(good.substr(0, good.size() - 1)),
                       "is damaged: its SHA-256 does not match its contents"));
  std::string flipped = good;
  flipped[good.size() / 2] ^= 1;
  EXPECT_TRUE(contains(refusal(flipped), "is damaged"));
  std::string version = good.substr(0, good.size() - 32);
  version[8] = 1;
  EXPECT_TRUE(
      contains(refusal(resealed(version)), "has container version 1; this popsim reads version 2"));
  std::string longer = good.substr(0, good.size() - 32);
  longer.replace(12, 8, withLength(uint64_t{1} << 62));
  EXPECT_TRUE(
      contains(refusal(resealed(longer)), "its header section claims 4611686018427387904 bytes"));
  EXPECT_TRUE(contains(refusal(resealed(good.substr(0, good.size() - 32) + "x")),
                       "1 bytes follow its last section"));
  // Crafted headers, under valid digests.
  EXPECT_TRUE(contains(refusal(container("[]", "")), "the header is not a JSON object"));
  EXPECT_TRUE(contains(refusal(container("{not json", "")), "the header is not a JSON object"));
  EXPECT_TRUE(contains(refusal(container(std::string(100000, '[') + std::string(100000, ']'), "")),
                       "has a malformed header: it is nested more than 128 deep"));
  nlohmann::json header = exampleHeader();
  header.erase("graph");
  EXPECT_TRUE(contains(refusal(container(header.dump(), "the program's bytes")),
                       "has a malformed header: it has no 'graph'"));
  header = exampleHeader();
  EXPECT_TRUE(contains(refusal(container(header.dump(), "another program")),
                       "the program's SHA-256 is not the one its header records"));
  header["training"] = "yes";
  EXPECT_TRUE(
      contains(refusal(container(header.dump(), "the program's bytes")), "'training' is \"yes\""));
}

TEST_F(ProgramFileTest, ACacheEntryMustBeThisUsersOwnRegularFile) {
  const fs::path path = directory_ / "entry.popsim";
  host::writeProgramFile(path, exampleFile());
  fs::create_symlink(path, directory_ / "link.popsim");
  EXPECT_TRUE(contains(captureError([&] {
                         host::readProgramFile(directory_ / "link.popsim", FileAccess::Private);
                       }).what(),
                       "is a symbolic link"));
  EXPECT_EQ(host::readProgramFile(directory_ / "link.popsim").program, "the program's bytes");
  ::chmod(path.c_str(), 0620);
  EXPECT_TRUE(
      contains(captureError([&] { host::readProgramFile(path, FileAccess::Private); }).what(),
               "'" + path.string() +
                   "' is writable by its group or by others (mode 0620; `chmod go-w` it)"));
  EXPECT_EQ(host::readProgramFile(path).program, "the program's bytes"); // an export may be
  EXPECT_THROW(host::readProgramFile(directory_ / "missing.popsim"), fs::filesystem_error);
}

TEST_F(ProgramFileTest, AMismatchNamesTheBuildTheModelOrEachOption) {
  const host::ProgramKey key = host::programKey(*graph_, options_);
  host::ProgramKey older = key;
  older.build = "0.5.0+0123456789abcdef";
  EXPECT_EQ(host::keyMismatch(older, key),
            "it was written by popsim 0.5.0+0123456789abcdef; this is popsim " + key.build +
                ", whose compiler may build another program");
  runtime::CompileOptions changed = options_;
  changed.compiler.deviceIterations = 2;
  changed.compiler.training.optimizer = compiler::OptimizerKind::Adam;
  changed.memory.availableMemoryProportion[1] = 0.3;
  EXPECT_EQ(host::keyMismatch(key, host::programKey(*graph_, changed)),
            "it was compiled for another program: option compiler.device_iterations: 1 in the "
            "file, 2 now; option compiler.training.optimizer: 'OptimizerKind.Sgd' in the file, "
            "'OptimizerKind.Adam' now; option memory.available_memory_proportion: [] in the "
            "file, [[1, 0.3]] now");
  EXPECT_NE(key.digest(), host::programKey(*graph_, changed).digest());
  ir::Graph other;
  other.addOutput(other.apply(
      ir::OpKind::Mul, {other.addInput("x", f32({2, 3})), other.addInput("y", f32({2, 3}))}));
  EXPECT_EQ(host::keyMismatch(key, host::programKey(other, options_)),
            "it was compiled for another program: the traced model (its ops, shapes, constants "
            "or source lines)");
  // Engine options apply as a program loads: not part of the key.
  changed = options_;
  changed.system.replicasPerHostThread = 4;
  EXPECT_EQ(host::programKey(*graph_, changed).digest(), key.digest());
}

TEST_F(ProgramFileTest, TheCacheLoadsWhatItStoredAndReplacesWhatItCannotUse) {
  const host::ExecutableCache cache{host::ExecutableCache::Source::Directory,
                                    (directory_ / "cache").string()};
  host::ObtainedExecutable first = host::executableFor(*graph_, options_, cache);
  EXPECT_EQ(first.origin, host::ProgramOrigin::Compiled);
  EXPECT_TRUE(first.warnings.empty());
  EXPECT_EQ(fs::status(cache.directory).permissions() & fs::perms::all, fs::perms::owner_all);
  const fs::path entry =
      fs::path(cache.directory) / (host::programKey(*graph_, options_).digest() + ".popsim");
  ASSERT_TRUE(fs::exists(entry));
  host::ObtainedExecutable second = host::executableFor(*graph_, options_, cache);
  EXPECT_EQ(second.origin, host::ProgramOrigin::Cache);
  EXPECT_EQ(second.executable->serializeProgram(), first.executable->serializeProgram());

  // Another model's program planted under this key: its header does not match.
  runtime::CompileOptions other = options_;
  other.compiler.deviceIterations = 3;
  host::ObtainedExecutable third = host::executableFor(*graph_, other, cache);
  fs::rename(fs::path(cache.directory) / (host::programKey(*graph_, other).digest() + ".popsim"),
             entry);
  host::ObtainedExecutable replaced = host::executableFor(*graph_, options_, cache);
  EXPECT_EQ(replaced.origin, host::ProgramOrigin::Compiled);
  ASSERT_EQ(replaced.warnings.size(), 1u);
  EXPECT_TRUE(
      contains(replaced.warnings[0], "option compiler.device_iterations: 3 in the file, 1 now"));
  EXPECT_TRUE(contains(replaced.warnings[0], "Compiling the model again and replacing the file."));
  EXPECT_EQ(host::executableFor(*graph_, options_, cache).origin, host::ProgramOrigin::Cache);

  // A directory others can write is not used, with one warning per process.
  const host::ExecutableCache shared{host::ExecutableCache::Source::Directory,
                                     (directory_ / "shared").string()};
  fs::create_directories(shared.directory);
  ::chmod(shared.directory.c_str(), 0777);
  host::ObtainedExecutable refused = host::executableFor(*graph_, options_, shared);
  ASSERT_EQ(refused.warnings.size(), 1u);
  EXPECT_TRUE(contains(refused.warnings[0],
                       "does not use the executable cache directory '" + shared.directory +
                           "': it is writable by its group or by others (mode 0777"));
  EXPECT_TRUE(host::executableFor(*graph_, options_, shared).warnings.empty());
  EXPECT_TRUE(fs::is_empty(shared.directory));
}

TEST(ExecutableCache, TheOptionsOrTheEnvironmentNameTheDirectory) {
  using Source = host::ExecutableCache::Source;
  ::setenv("POPTORCH_CACHE_DIR", "/tmp/poptorch-cache", 1);
  ::setenv("POPSIM_CACHE_DIR", "  ", 1); // blank: as if unset
  EXPECT_EQ(host::cacheDirectory({Source::Environment, ""}), "/tmp/poptorch-cache");
  ::setenv("POPSIM_CACHE_DIR", "/tmp/popsim-cache", 1); // popsim's first
  EXPECT_EQ(host::cacheDirectory({Source::Environment, ""}), "/tmp/popsim-cache");
  EXPECT_EQ(host::cacheDirectory({Source::Off, ""}), std::nullopt);
  EXPECT_EQ(host::cacheDirectory({Source::Directory, "/mine"}), "/mine");
  ::unsetenv("POPSIM_CACHE_DIR");
  ::unsetenv("POPTORCH_CACHE_DIR");
  EXPECT_EQ(host::cacheDirectory({Source::Environment, ""}), std::nullopt);
}

} // namespace
} // namespace popsim
