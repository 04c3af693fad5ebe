#ifndef STREAMREG_SERVER_RPC_LISTEN_FOR_CALLS_H_
#define STREAMREG_SERVER_RPC_LISTEN_FOR_CALLS_H_

#include <memory>
#include <utility>

#include "grpcpp/grpcpp.h"
#include "grpcpp/support/async_stream.h"
#include "server/rpc/async_stream_call.h"
#include "server/rpc/async_unary_call.h"

namespace streamreg {

// Listens on `thread`'s queue for the calls of one method of a generated async
// service (`service`, its RequestName member `request`), which `serve`
// serves: for a unary method it is called as the handler of each call
// (context, request, response, UnaryReactor*); for a streaming method it
// makes each call's reactor (from the call; for a client-streaming method
// the response too, for a server-streaming one the request). The kind of
// call follows from the RequestName's signature. Call once the server is
// started; one call is listened for at a time, and each arrival listens
// for the next.

template <typename Service, typename Base, typename Request, typename Response,
          typename Serve>
void ListenForCalls(
    CompletionQueueThread* thread, Service* service,
    void (Base::*request)(grpc::ServerContext*, Request*,
                          grpc::ServerAsyncResponseWriter<Response>*,
                          grpc::CompletionQueue*, grpc::ServerCompletionQueue*,
                          void*),
    Serve serve) {
  using Call = AsyncUnaryCall<Request, Response>;
  Call::Listen(
      std::make_shared<const typename Call::Method>(typename Call::Method{
          .request =
              [service, request](grpc::ServerContext* context, Request* message,
                                 typename Call::Writer* writer,
                                 grpc::ServerCompletionQueue* on, void* tag) {
                (service->*request)(context, message, writer, on, on, tag);
              },
          .handle = std::move(serve),
          .thread = thread}));
}

namespace listen_internal {

// A bidirectional or client-streaming method's: requested without its
// request message.
template <Streaming kind, typename Request, typename Response, typename Service,
          typename RequestName, typename Serve>
void ListenForStreamCalls(CompletionQueueThread* thread, Service* service,
                          RequestName request, Serve serve) {
  using Call = AsyncStreamCall<Request, Response, kind>;
  Call::Listen(
      std::make_shared<const typename Call::Method>(typename Call::Method{
          .request =
              [service, request](grpc::ServerContext* context,
                                 typename Call::Stream* stream,
                                 grpc::ServerCompletionQueue* on, void* tag) {
                (service->*request)(context, stream, on, on, tag);
              },
          .start = std::move(serve),
          .thread = thread}));
}

}  // namespace listen_internal

template <typename Service, typename Base, typename Request, typename Response,
          typename Serve>
void ListenForCalls(
    CompletionQueueThread* thread, Service* service,
    void (Base::*request)(grpc::ServerContext*,
                          grpc::ServerAsyncReaderWriter<Response, Request>*,
                          grpc::CompletionQueue*, grpc::ServerCompletionQueue*,
                          void*),
    Serve serve) {
  listen_internal::ListenForStreamCalls<Streaming::kBidi, Request, Response>(
      thread, service, request, std::move(serve));
}

template <typename Service, typename Base, typename Request, typename Response,
          typename Serve>
void ListenForCalls(
    CompletionQueueThread* thread, Service* service,
    void (Base::*request)(grpc::ServerContext*,
                          grpc::ServerAsyncReader<Response, Request>*,
                          grpc::CompletionQueue*, grpc::ServerCompletionQueue*,
                          void*),
    Serve serve) {
  listen_internal::ListenForStreamCalls<Streaming::kClient, Request, Response>(
      thread, service, request, std::move(serve));
}

template <typename Service, typename Base, typename Request, typename Response,
          typename Serve>
void ListenForCalls(CompletionQueueThread* thread, Service* service,
                    void (Base::*request)(grpc::ServerContext*, Request*,
                                          grpc::ServerAsyncWriter<Response>*,
                                          grpc::CompletionQueue*,
                                          grpc::ServerCompletionQueue*, void*),
                    Serve serve) {
  using Call = AsyncStreamCall<Request, Response, Streaming::kServer>;
  Call::Listen(
      std::make_shared<const typename Call::Method>(typename Call::Method{
          .request =
              [service, request](grpc::ServerContext* context, Request* message,
                                 typename Call::Stream* stream,
                                 grpc::ServerCompletionQueue* on, void* tag) {
                (service->*request)(context, message, stream, on, on, tag);
              },
          .start = std::move(serve),
          .thread = thread}));
}

}  // namespace streamreg

#endif  // STREAMREG_SERVER_RPC_LISTEN_FOR_CALLS_H_
