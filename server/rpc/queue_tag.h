#ifndef STREAMREG_SERVER_RPC_QUEUE_TAG_H_
#define STREAMREG_SERVER_RPC_QUEUE_TAG_H_

namespace streamreg {

// What an operation started through gRPC's async API does when it
// completes: the operation's tag, whose Completed the completion queue's
// thread calls (ok: whether the operation succeeded;
// CompletionQueueThread).
class QueueTag {
 public:
  virtual void Completed(bool ok) = 0;

 protected:
  ~QueueTag() = default;
};

// A QueueTag that calls a member function of its owner.
template <typename Owner>
class MemberTag final : public QueueTag {
 public:
  MemberTag(Owner* owner, void (Owner::*handler)(bool))
      : owner_(owner), handler_(handler) {}
  void Completed(bool ok) override { (owner_->*handler_)(ok); }

 private:
  Owner* const owner_;
  void (Owner::*const handler_)(bool);
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_RPC_QUEUE_TAG_H_
