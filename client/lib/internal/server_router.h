#ifndef STREAMREG_CLIENT_LIB_INTERNAL_SERVER_ROUTER_H_
#define STREAMREG_CLIENT_LIB_INTERNAL_SERVER_ROUTER_H_

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "streamreg/v1/model_service.grpc.pb.h"
#include "streamreg/v1/regression_service.grpc.pb.h"

namespace streamreg {

// One server's channel and the two services' stubs over it.
struct ServerStubs {
  std::string address;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::ModelService::Stub> models;
  std::unique_ptr<v1::RegressionService::Stub> regression;
};

// Which server a client's call for a model goes to, among the servers it
// was given (one, or some servers of a cluster; docs/api.md, "Cluster
// mode"): the servers a cluster last named for the model (a server that
// does not serve a model answers UNAVAILABLE naming those that do), else
// the first of the given servers that has not just failed. A server that
// fails a call with UNAVAILABLE or DEADLINE_EXCEEDED goes to the back of
// the line for the next attempt, and is passed over for kAvoidFor while
// another is left (a cluster naming it again does not bring it back
// first). Thread-safe.
class ServerRouter {
 public:
  using ChannelFactory =
      std::function<std::shared_ptr<grpc::Channel>(const std::string&)>;

  // `servers`: host:port each, at least one. `make_channel` opens a
  // channel to a server, the first time a call goes to it.
  ServerRouter(std::vector<std::string> servers, ChannelFactory make_channel);
  // One server, over an existing channel.
  ServerRouter(std::string server, std::shared_ptr<grpc::Channel> channel);

  // The server for a call about `model` ("": about no model in particular).
  std::shared_ptr<ServerStubs> For(const std::string& model);
  // The server For would pick for `model` among those not in `asked` (a
  // read asking the next server while the ones before have not answered:
  // HedgedRead), or null when every server it may go to is in `asked`.
  std::shared_ptr<ServerStubs> NextFor(const std::string& model,
                                       const std::vector<std::string>& asked);
  // A call about `model` on `used` failed with `status`: remembers the
  // servers it names, or moves past `used`.
  void Failed(const std::string& model, const ServerStubs& used,
              const absl::Status& status);
  // A cluster named `servers` as serving `model` (a listing's
  // ModelElsewhere): calls about it go there.
  void Serves(const std::string& model, std::vector<std::string> servers);
  // How many servers a call about `model` may go to: those named for it,
  // else the given ones.
  std::size_t CandidatesFor(const std::string& model);

  // How long a server that failed a call is passed over.
  static constexpr absl::Duration kAvoidFor = absl::Seconds(10);

  const std::vector<std::string>& servers() const { return servers_; }

 private:
  std::shared_ptr<ServerStubs> StubsOf(const std::string& address)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // The servers a cluster named for `model`, or null (none, or no model).
  const std::vector<std::string>* OwnersOf(const std::string& model) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // The first of `line` (in order from `first`) not in `asked`, the first
  // that is not avoided either if there is one; null if all are asked.
  std::shared_ptr<ServerStubs> FirstOf(const std::vector<std::string>& line,
                                       std::size_t first,
                                       const std::vector<std::string>& asked)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Whether `address` failed a call within kAvoidFor before `now`.
  bool Avoided(const std::string& address, absl::Time now) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);

  const std::vector<std::string> servers_;
  const ChannelFactory make_channel_;
  absl::Mutex mutex_;
  // servers_[preferred_] serves calls about models of unknown placement.
  std::size_t preferred_ ABSL_GUARDED_BY(mutex_) = 0;
  std::map<std::string, std::shared_ptr<ServerStubs>> stubs_
      ABSL_GUARDED_BY(mutex_);
  // The servers a cluster named per model, the next to try first.
  std::map<std::string, std::vector<std::string>> owners_
      ABSL_GUARDED_BY(mutex_);
  // When each server that failed a call may be asked first again.
  std::map<std::string, absl::Time> avoid_until_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_LIB_INTERNAL_SERVER_ROUTER_H_
