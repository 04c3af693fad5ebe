#ifndef STREAMREG_COMMON_DURABILITY_TRAILER_H_
#define STREAMREG_COMMON_DURABILITY_TRAILER_H_

namespace streamreg {

// The trailer a Learn call ends with: how many of its messages are durable
// (all of them when it ends OK), the final durability watermark
// (LearnResponse.durable_messages), in decimal.
inline constexpr char kDurableMessagesTrailer[] = "streamreg-durable-messages";

}  // namespace streamreg

#endif  // STREAMREG_COMMON_DURABILITY_TRAILER_H_
