// RecordWriter (sim/model/record_writer.h): the model's records file, written on a thread of
// its own. Bytes reach the file in the order they were committed, across buffer hand-offs,
// and a file that refuses writes ends in failed() and a false close() without the model
// ever waiting forever for a buffer.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "record_writer.h"

using fisrig::model::RecordWriter;

namespace {

// 104 bytes, as a run record: records straddle the writer's 1 MiB buffers.
constexpr size_t kRecord = 104;

void put(RecordWriter& w, uint64_t i) {
  char* p = w.room(kRecord);
  for (size_t b = 0; b < kRecord; ++b) p[b] = char((i * 131 + b) & 0xFF);
  w.commit(kRecord);
}

}  // namespace

TEST(RecordWriter, EveryByteReachesTheFileInOrder) {
  char path[] = "/tmp/fisrig_record_writer_XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  // Past all of the writer's buffers several times over, with hand-offs of part-filled ones
  // between (the model's once-a-second flush).
  const uint64_t n = 3 * RecordWriter::kBuffers * RecordWriter::kBufferBytes / kRecord + 17;
  {
    RecordWriter w(fd);
    for (uint64_t i = 0; i < n; ++i) {
      put(w, i);
      if (i % 50'000 == 7) w.hand_off();
    }
    EXPECT_TRUE(w.close());
    EXPECT_FALSE(w.failed());
  }
  std::FILE* f = std::fopen(path, "rb");
  ASSERT_NE(f, nullptr);
  std::vector<char> got(kRecord);
  uint64_t i = 0;
  for (; std::fread(got.data(), 1, kRecord, f) == kRecord; ++i)
    for (size_t b = 0; b < kRecord; ++b) ASSERT_EQ(got[b], char((i * 131 + b) & 0xFF)) << "record " << i;
  std::fclose(f);
  std::remove(path);
  EXPECT_EQ(i, n);
}

TEST(RecordWriter, AFileThatRefusesWritesFailsWithoutHanging) {
  int fd = ::open("/dev/full", O_WRONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  RecordWriter w(fd);
  // Far more than the buffers hold: after the first refusal the rest are dropped and their
  // buffers come back, so room() never waits for good.
  for (uint64_t i = 0; i < 4 * RecordWriter::kBuffers * RecordWriter::kBufferBytes / kRecord; ++i) put(w, i);
  EXPECT_FALSE(w.close());
  EXPECT_TRUE(w.failed());
  EXPECT_EQ(w.error(), ENOSPC);
}
