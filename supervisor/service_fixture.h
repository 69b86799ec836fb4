// A test fixture running the real service core (real sandboxes, real agents) on a fresh
// state dir, with synchronous helpers around the asynchronous Exec.
#ifndef ZYGO_SUPERVISOR_SERVICE_FIXTURE_H_
#define ZYGO_SUPERVISOR_SERVICE_FIXTURE_H_

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "supervisor/supervisor_service.h"

namespace zygo::supervisor {

class ServiceFixture : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  // A service on this test's state dir (SetUp starts one; a test may restart it).
  void StartService();

  // Writes `files` (name, content) into the code dir, then registers the TOML.
  void Up(const std::string& toml);
  void WriteCode(const std::string& name, const std::string& content);
  ExecReply Call(const std::string& name, const std::string& event = "",
                 const std::string& script = "");

  // Points the service at an image store of this test's own (ZYGO_HOME, unset again in
  // TearDown); functions on `image = "REF"` find what LoadTestImage put there.
  void UseOwnImageStore();
  // Builds the test image `name` (tools/images) and `zygo load`s it into that store as `ref`.
  void LoadTestImage(const std::string& name, const std::string& ref);

  // The agents of this test's own sandboxes (their grandparent is this process), and
  // every process below them (spares and requests).
  static std::vector<int> OurAgents();
  // Runtime zygotes of the zygote tree that this process's service started.
  static std::vector<int> OurRuntimeZygotes();
  static std::vector<int> DescendantsOf(const std::vector<int>& roots);
  // Our own cgroups (named zygo-<our pid>-*) in the memory hierarchy, recursively.
  static std::vector<std::string> OurCgroups();
  static int OpenFdCount();

  std::unique_ptr<core::CgroupDriver> cgroups_;
  std::string dir_;        // code dir and base dir for specs
  std::string state_dir_;  // the service's state dir, beside dir_
  std::unique_ptr<SupervisorService> service_;
  int workers_ = 16;
  // Python functions fork from a runtime zygote (SupervisorOptions::zygote_tree, on by
  // default as in zygo serve).
  bool zygote_tree_ = true;
  std::string image_store_;  // UseOwnImageStore's, or empty
};

}  // namespace zygo::supervisor

#endif  // ZYGO_SUPERVISOR_SERVICE_FIXTURE_H_
