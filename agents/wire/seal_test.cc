#include "agents/wire/seal.h"

#include <unistd.h>

#include <string>

#include "gtest/gtest.h"
#include "agents/wire/fields.h"

namespace zygo::wire {
namespace {

SealMessage Sample() {
  SealMessage m;
  m.env = {"PATH=/usr/bin:/bin", "GREETING=a=b", "EMPTY="};
  m.workdir = "/code";
  m.code_dir = "/code";
  m.entry = "handler.py:main";
  m.preload = {"json", "os.path"};
  m.seccomp_filter = std::string(16, '\x06');
  return m;
}

ReceivedFrame WithLogFd(Frame frame) {
  ReceivedFrame received;
  received.frame = std::move(frame);
  received.fds.emplace_back(::dup(2));
  return received;
}

TEST(SealTest, RoundTripsEveryField) {
  absl::StatusOr<Frame> frame = Encode(Sample());
  ASSERT_TRUE(frame.ok()) << frame.status();
  EXPECT_EQ(frame->type, MessageType::kSeal);
  absl::StatusOr<SealMessage> got = DecodeSeal(WithLogFd(*frame));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->env, Sample().env);
  EXPECT_EQ(got->workdir, "/code");
  EXPECT_EQ(got->code_dir, "/code");
  EXPECT_EQ(got->entry, "handler.py:main");
  EXPECT_EQ(got->preload, Sample().preload);
  EXPECT_EQ(got->seccomp_filter, Sample().seccomp_filter);
}

TEST(SealTest, APoolHasNoEntryAndAnEmptyEnvironmentIsKept) {
  SealMessage m = Sample();
  m.entry.clear();
  m.env.clear();
  m.preload.clear();
  absl::StatusOr<SealMessage> got = DecodeSeal(WithLogFd(*Encode(m)));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(got->entry.empty());
  EXPECT_TRUE(got->env.empty());
  EXPECT_TRUE(got->preload.empty());
}

TEST(SealTest, RefusesWhatAZygoteCouldNotApply) {
  SealMessage m = Sample();
  ASSERT_TRUE(Encode(m).ok());  // The control: each change below is the only fault.
  m.env.push_back("NOEQUALS");
  EXPECT_FALSE(Encode(m).ok());
  m = Sample();
  m.env.push_back("=value");
  EXPECT_FALSE(Encode(m).ok());
  m = Sample();
  m.env.push_back(std::string("A=b\0c", 5));
  EXPECT_FALSE(Encode(m).ok());
  m = Sample();
  m.workdir = "code";
  EXPECT_FALSE(Encode(m).ok());
  m = Sample();
  m.preload.push_back("");
  EXPECT_FALSE(Encode(m).ok());
  m = Sample();
  m.seccomp_filter.clear();
  EXPECT_FALSE(Encode(m).ok());
  m.seccomp_filter = std::string(12, 'x');  // not whole instructions
  EXPECT_FALSE(Encode(m).ok());
  m.seccomp_filter = std::string(kMaxSealFilterBytes + 8, 'x');
  EXPECT_FALSE(Encode(m).ok());
}

TEST(SealTest, DecodeRefusesAMissingLogFdARequestIdAndStrayFields) {
  const Frame frame = *Encode(Sample());
  ReceivedFrame received;
  received.frame = frame;
  EXPECT_FALSE(DecodeSeal(received).ok());  // No fd.
  received = WithLogFd(frame);
  ASSERT_TRUE(DecodeSeal(received).ok());  // The control.
  received.frame.request_id = 4;
  EXPECT_FALSE(DecodeSeal(received).ok());
  received.frame = {MessageType::kSeal, 0, FieldWriter().AddU64(1, 1).Finish()};
  EXPECT_FALSE(DecodeSeal(received).ok());  // env must be bytes, and the rest is missing.
  received.frame = frame;
  received.frame.type = MessageType::kIsolate;
  EXPECT_FALSE(DecodeSeal(received).ok());
}

}  // namespace
}  // namespace zygo::wire
