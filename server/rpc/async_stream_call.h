#ifndef STREAMREG_SERVER_RPC_ASYNC_STREAM_CALL_H_
#define STREAMREG_SERVER_RPC_ASYNC_STREAM_CALL_H_

#include <functional>
#include <memory>
#include <type_traits>
#include <utility>

#include "grpcpp/grpcpp.h"
#include "grpcpp/impl/codegen/proto_utils.h"
#include "grpcpp/support/async_stream.h"
#include "server/rpc/async_call.h"

namespace streamreg {

// Which way a streaming method streams.
enum class Streaming {
  kBidi,    // stream Request -> stream Response
  kClient,  // stream Request -> Response
  kServer,  // Request -> stream Response
};

template <typename Request, typename Response, Streaming kind>
class AsyncStreamCall;

// What serves one streaming call, as gRPC's callback reactors
// (ServerBidiReactor, ServerReadReactor, ServerWriteReactor) do, on the
// completion queue (AsyncStreamCall): it starts reads and writes, one of
// each at a time, from any thread, and finishes the call once, with no
// write out; OnReadDone and OnWriteDone run on the queue's thread when they
// complete; OnDone runs when the call is done, and nothing of the reactor
// may run after it (it usually deletes the reactor).
template <typename Request, typename Response, Streaming kind>
class StreamReactor {
 public:
  using Call = AsyncStreamCall<Request, Response, kind>;

  virtual ~StreamReactor() = default;
  virtual void OnReadDone(bool /*ok*/) {}
  virtual void OnWriteDone(bool /*ok*/) {}
  virtual void OnDone() = 0;

 protected:
  explicit StreamReactor(Call* call) : call_(call) {}
  void StartRead(Request* request) requires(kind != Streaming::kServer) {
    call_->StartRead(request);
  }
  void StartWrite(const Response* response) requires(kind !=
                                                     Streaming::kClient) {
    call_->StartWrite(response);
  }
  // A client-streaming call answers with the response its reactor was
  // given, if `status` is OK.
  void Finish(grpc::Status status) { call_->Finish(std::move(status)); }

 private:
  Call* const call_;
};

template <typename Request, typename Response>
using BidiReactor = StreamReactor<Request, Response, Streaming::kBidi>;
template <typename Request, typename Response>
using ReadReactor = StreamReactor<Request, Response, Streaming::kClient>;
template <typename Request, typename Response>
using WriteReactor = StreamReactor<Request, Response, Streaming::kServer>;

// One call of a streaming method served through the completion queue
// (AsyncCall), and its reactor.
template <typename Request, typename Response, Streaming kind>
class AsyncStreamCall final : public AsyncCall {
 public:
  using Reactor = StreamReactor<Request, Response, kind>;
  // gRPC's async stream of this kind, on the server's side.
  using Stream = std::conditional_t<
      kind == Streaming::kBidi,
      grpc::ServerAsyncReaderWriter<Response, Request>,
      std::conditional_t<kind == Streaming::kClient,
                         grpc::ServerAsyncReader<Response, Request>,
                         grpc::ServerAsyncWriter<Response>>>;
  // What the reactor is made from: the call, and for a client-streaming
  // method the response to fill, for a server-streaming one the request.
  using Start = std::conditional_t<
      kind == Streaming::kBidi, std::function<Reactor*(AsyncStreamCall*)>,
      std::conditional_t<
          kind == Streaming::kClient,
          std::function<Reactor*(AsyncStreamCall*, Response*)>,
          std::function<Reactor*(AsyncStreamCall*, const Request*)>>>;
  // How a call of the method is requested: the generated service's
  // RequestName, without the request message unless server-streaming.
  using RequestCall = std::conditional_t<
      kind == Streaming::kServer,
      std::function<void(grpc::ServerContext*, Request*, Stream*,
                         grpc::ServerCompletionQueue*, void*)>,
      std::function<void(grpc::ServerContext*, Stream*,
                         grpc::ServerCompletionQueue*, void*)>>;
  struct Method {
    RequestCall request;
    Start start;
    CompletionQueueThread* thread = nullptr;
  };

  // Listens for the next call of `method`.
  static void Listen(std::shared_ptr<const Method> method) {
    new AsyncStreamCall(std::move(method));
  }

  void StartRead(Request* request) {
    OperationStarting();
    stream_.Read(request, &read_);
  }
  void StartWrite(const Response* response) {
    OperationStarting();
    stream_.Write(*response, &written_);
  }
  void Finish(grpc::Status status) {
    if constexpr (kind == Streaming::kClient) {
      FinishAnswering(stream_, response_, status);
    } else {
      stream_.Finish(status, FinishStarting());
    }
  }

 private:
  explicit AsyncStreamCall(std::shared_ptr<const Method> method)
      : AsyncCall(method->thread),
        method_(std::move(method)),
        stream_(context()) {
    if constexpr (kind == Streaming::kServer) {
      method_->request(context(), &request_, &stream_, method_->thread->queue(),
                       arrival_tag());
    } else {
      method_->request(context(), &stream_, method_->thread->queue(),
                       arrival_tag());
    }
  }

  void Arrived() override {
    Listen(method_);
    if constexpr (kind == Streaming::kBidi) {
      reactor_ = method_->start(this);
    } else if constexpr (kind == Streaming::kClient) {
      reactor_ = method_->start(this, &response_);
    } else {
      reactor_ = method_->start(this, &request_);
    }
  }
  void Done() override { reactor_->OnDone(); }

  void OnRead(bool ok) {
    reactor_->OnReadDone(ok);
    OperationEnded();
  }
  void OnWritten(bool ok) {
    reactor_->OnWriteDone(ok);
    OperationEnded();
  }

  const std::shared_ptr<const Method> method_;
  // The request of a server-streaming call, the response of a
  // client-streaming one (unused otherwise).
  Request request_;
  Response response_;
  Stream stream_;
  Reactor* reactor_ = nullptr;
  MemberTag<AsyncStreamCall> read_{this, &AsyncStreamCall::OnRead};
  MemberTag<AsyncStreamCall> written_{this, &AsyncStreamCall::OnWritten};
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_RPC_ASYNC_STREAM_CALL_H_
