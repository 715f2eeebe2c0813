// Files written into shared directories: a symlink planted under the final
// or a temporary name is never followed, and directories another user
// controls are refused.

#include "common/safe_files.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace popsim {
namespace {

namespace fs = std::filesystem;

std::string contents(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

class SafeFilesTest : public ::testing::Test {
protected:
  void SetUp() override {
    directory_ = fs::temp_directory_path() /
                 ("popsim-safe-files-" + std::to_string(::getpid()) + "-" +
                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(directory_);
    fs::create_directories(directory_);
  }
  void TearDown() override { fs::remove_all(directory_); }
  fs::path directory_;
};

TEST_F(SafeFilesTest, APlantedLinkIsReplacedNotWrittenThrough) {
  const fs::path precious = directory_ / "precious";
  std::ofstream(precious) << "keep me";
  const fs::path report = directory_ / "report.html";
  fs::create_symlink(precious, report);
  writeFileAtomically(report.string(), "<html>");
  EXPECT_EQ(contents(precious), "keep me");
  EXPECT_FALSE(fs::is_symlink(report));
  EXPECT_EQ(contents(report), "<html>");
  struct stat status {};
  ASSERT_EQ(::stat(report.c_str(), &status), 0);
  EXPECT_EQ(status.st_mode & 0777, 0644u);
  // No temporary file is left behind.
  EXPECT_EQ(std::distance(fs::directory_iterator(directory_), fs::directory_iterator()), 2);
}

TEST_F(SafeFilesTest, AFailedWriteNamesThePath) {
  const std::string missing = (directory_ / "missing" / "file").string();
  try {
    writeFileAtomically(missing, "x");
    FAIL() << "wrote into a missing directory";
  } catch (const fs::filesystem_error& error) {
    EXPECT_NE(std::string(error.what()).find((directory_ / "missing").string()), std::string::npos)
        << error.what();
  }
}

TEST_F(SafeFilesTest, DirectoriesOthersControlAreRefused) {
  EXPECT_EQ(sharedDirectoryProblem(directory_.string()), std::nullopt);
  fs::permissions(directory_, fs::perms::all);
  EXPECT_EQ(sharedDirectoryProblem(directory_.string()).value_or(""),
            "is writable by its group or by others without the sticky bit (mode 0777; `chmod "
            "go-w` it)");
  fs::permissions(directory_, fs::perms::all | fs::perms::sticky_bit); // as /tmp
  EXPECT_EQ(sharedDirectoryProblem(directory_.string()), std::nullopt);
  const fs::path file = directory_ / "file";
  std::ofstream(file) << "x";
  EXPECT_EQ(sharedDirectoryProblem(file.string()).value_or(""), "is not a directory");
  if (::geteuid() == 0) { // giving it away needs root
    ASSERT_EQ(::chown(directory_.c_str(), 12345, static_cast<gid_t>(-1)), 0);
    EXPECT_NE(
        sharedDirectoryProblem(directory_.string()).value_or("").find("is owned by user id 12345"),
        std::string::npos);
  }
}

} // namespace
} // namespace popsim
