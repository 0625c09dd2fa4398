// Reading a user-named file: never blocks on a FIFO, names a directory, a socket or a device as
// what it is, and refuses more than the caller's bound, including files whose size stat() does
// not tell (/proc).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/file_text.hpp"

namespace hccl::text {
namespace {

namespace fs = std::filesystem;

class FileText : public testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/hccl_file_text_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path(name), std::ios::binary) << text;
    return path(name);
  }
  fs::path dir_;
};

TEST_F(FileText, ReadsARegularFileWhole) {
  const std::string text(100000, 'x');
  const auto r = readRegularFile(write("a.json", text), 100000);
  ASSERT_TRUE(r.text) << r.error;
  EXPECT_EQ(*r.text, text);
  const auto empty = readRegularFile(write("empty", ""), 10);
  ASSERT_TRUE(empty.text) << empty.error;
  EXPECT_EQ(*empty.text, "");
}

TEST_F(FileText, RefusesMoreThanTheBound) {
  const auto r = readRegularFile(write("big", std::string(1025, 'x')), 1024);
  EXPECT_FALSE(r.text);
  EXPECT_EQ(r.error, "is 1025 bytes, more than 1 KiB (the limit for this file)");
  // /proc files report size 0: the bound holds while reading.
  const auto proc = readRegularFile("/proc/self/maps", 16);
  EXPECT_FALSE(proc.text);
  EXPECT_EQ(proc.error, "holds more than 16 bytes (the limit for this file)");
}

TEST_F(FileText, AFifoReturnsAtOnce) {
  const std::string fifo = path("fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  const auto start = std::chrono::steady_clock::now();
  const auto r = readRegularFile(fifo, 1024);  // no writer: a blocking open would never return
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_FALSE(r.text);
  EXPECT_EQ(r.error, "is a FIFO (named pipe); expected a regular file");
}

TEST_F(FileText, NamesWhatThePathIs) {
  EXPECT_EQ(readRegularFile(dir_.string(), 1024).error, "is a directory; expected a regular file");
  EXPECT_EQ(readRegularFile("/dev/null", 1024).error,
            "is a character device; expected a regular file");
  EXPECT_EQ(readRegularFile(path("missing"), 1024).error,
            "cannot be opened: No such file or directory");
  EXPECT_EQ(readRegularFile(write("f", "x") + "/below", 1024).error,
            "cannot be opened: Not a directory");
  EXPECT_EQ(readRegularFile("", 1024).error,
            "the path is empty; expected the name of a regular file");

  const int s = socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(s, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string sock = path("sock");
  ASSERT_LT(sock.size(), sizeof addr.sun_path);
  std::memcpy(addr.sun_path, sock.c_str(), sock.size() + 1);
  ASSERT_EQ(bind(s, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
  // Opening a socket fails (ENXIO) before it can be examined; the message still says why.
  const auto r = readRegularFile(sock, 1024);
  EXPECT_FALSE(r.text);
  EXPECT_EQ(r.error, "cannot be opened: No such device or address");
  close(s);
}

TEST(ByteSize, ForMessages) {
  EXPECT_EQ(byteSize(100), "100 bytes");
  EXPECT_EQ(byteSize(4096), "4 KiB");
  EXPECT_EQ(byteSize(64u << 20), "64 MiB");
  EXPECT_EQ(byteSize(1u << 30), "1 GiB");
  EXPECT_EQ(byteSize(1500), "1500 bytes");
}

}  // namespace
}  // namespace hccl::text
