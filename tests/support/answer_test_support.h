#ifndef STREAMREG_TESTS_SUPPORT_ANSWER_TEST_SUPPORT_H_
#define STREAMREG_TESTS_SUPPORT_ANSWER_TEST_SUPPORT_H_

#include <utility>
#include <vector>

#include "core/model/prediction.h"
#include "server/hosting/answer_errors.h"

namespace streamreg {

// What the tests of the answers' errors share: options at the 90% level,
// and answers with or without the model's interval.
inline AnswerErrors::Options AnswerOptions(double step = 0.005) {
  return {.intervals = {.level = 0.9, .window = 2000, .step = step},
          .forgetting = 0.999};
}

// An answer of `value` for every target, carrying the interval the model
// gave it (+-1, or none).
inline Prediction AnswerOf(std::vector<double> value,
                           bool with_interval = true) {
  Prediction answer;
  answer.value = std::move(value);
  if (with_interval) {
    for (double v : answer.value) {
      answer.lower.push_back(v - 1.0);
      answer.upper.push_back(v + 1.0);
    }
  }
  return answer;
}

}  // namespace streamreg

#endif  // STREAMREG_TESTS_SUPPORT_ANSWER_TEST_SUPPORT_H_
