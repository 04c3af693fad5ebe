#include "client/lib/internal/server_router.h"

#include <algorithm>
#include <utility>

#include "absl/time/clock.h"
#include "common/served_by.h"

namespace streamreg {
namespace {

// A failure that says the server could not be reached or did not answer
// in time: the next attempt goes elsewhere.
bool ServerFailed(const absl::Status& status) {
  return absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status);
}

}  // namespace

ServerRouter::ServerRouter(std::vector<std::string> servers,
                           ChannelFactory make_channel)
    : servers_(std::move(servers)), make_channel_(std::move(make_channel)) {}

ServerRouter::ServerRouter(std::string server,
                           std::shared_ptr<grpc::Channel> channel)
    : servers_{server},
      make_channel_([channel](const std::string&) { return channel; }) {}

std::shared_ptr<ServerStubs> ServerRouter::StubsOf(const std::string& address) {
  std::shared_ptr<ServerStubs>& stubs = stubs_[address];
  if (stubs == nullptr) {
    stubs = std::make_shared<ServerStubs>();
    stubs->address = address;
    stubs->channel = make_channel_(address);
    stubs->models = v1::ModelService::NewStub(stubs->channel);
    stubs->regression = v1::RegressionService::NewStub(stubs->channel);
  }
  return stubs;
}

bool ServerRouter::Avoided(const std::string& address, absl::Time now) const {
  const auto avoided = avoid_until_.find(address);
  return avoided != avoid_until_.end() && avoided->second > now;
}

const std::vector<std::string>* ServerRouter::OwnersOf(
    const std::string& model) const {
  const auto owners = owners_.find(model);
  if (model.empty() || owners == owners_.end() || owners->second.empty()) {
    return nullptr;
  }
  return &owners->second;
}

std::shared_ptr<ServerStubs> ServerRouter::FirstOf(
    const std::vector<std::string>& line, std::size_t first,
    const std::vector<std::string>& asked) {
  const absl::Time now = absl::Now();
  const std::string* fallback = nullptr;  // the first not asked
  for (std::size_t i = 0; i < line.size(); ++i) {
    const std::string& server = line[(first + i) % line.size()];
    if (std::find(asked.begin(), asked.end(), server) != asked.end()) continue;
    if (!Avoided(server, now)) return StubsOf(server);
    if (fallback == nullptr) fallback = &server;
  }
  return fallback != nullptr ? StubsOf(*fallback) : nullptr;
}

std::shared_ptr<ServerStubs> ServerRouter::NextFor(
    const std::string& model, const std::vector<std::string>& asked) {
  absl::MutexLock lock(&mutex_);
  if (const std::vector<std::string>* owners = OwnersOf(model)) {
    return FirstOf(*owners, 0, asked);
  }
  return FirstOf(servers_, preferred_, asked);  // preferred first
}

std::shared_ptr<ServerStubs> ServerRouter::For(const std::string& model) {
  return NextFor(model, {});
}

std::size_t ServerRouter::CandidatesFor(const std::string& model) {
  absl::MutexLock lock(&mutex_);
  const std::vector<std::string>* owners = OwnersOf(model);
  return owners != nullptr ? owners->size() : servers_.size();
}

void ServerRouter::Failed(const std::string& model, const ServerStubs& used,
                          const absl::Status& status) {
  std::vector<std::string> named = ServedBy(status);
  if (!named.empty() && !model.empty()) {
    Serves(model, std::move(named));
    return;
  }
  if (!ServerFailed(status)) return;
  absl::MutexLock lock(&mutex_);
  avoid_until_[used.address] = absl::Now() + kAvoidFor;
  if (const auto owners = owners_.find(model);
      owners != owners_.end() && !owners->second.empty() &&
      owners->second.front() == used.address) {
    std::rotate(owners->second.begin(), owners->second.begin() + 1,
                owners->second.end());
    return;
  }
  if (servers_[preferred_] == used.address) {
    preferred_ = (preferred_ + 1) % servers_.size();
  }
}

void ServerRouter::Serves(const std::string& model,
                          std::vector<std::string> servers) {
  if (model.empty() || servers.empty()) return;
  absl::MutexLock lock(&mutex_);
  owners_[model] = std::move(servers);
}

}  // namespace streamreg
