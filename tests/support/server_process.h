#ifndef STREAMREG_TESTS_SUPPORT_SERVER_PROCESS_H_
#define STREAMREG_TESTS_SUPPORT_SERVER_PROCESS_H_

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/support/reserved_port.h"

namespace streamreg {

// streamreg-server (the binary at `server`) in a child process over a data
// directory, for the tests that kill it: started on a port reserved for it
// (ReservedPort: no bind to port 0 elsewhere takes it while it is down)
// and on that same port after every kill, with `flags` besides
// --listen, --data_dir and --metrics_listen= (none). Its standard error
// goes to <data_dir>.log. Killed with the test.
class ServerProcess {
 public:
  ServerProcess(std::string server, std::string data_dir,
                std::vector<std::string> flags)
      : server_(std::move(server)),
        data_dir_(std::move(data_dir)),
        flags_(std::move(flags)) {}
  ~ServerProcess() { Kill(); }
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  // Variables ("NAME=value") set in the server's environment at its next
  // start, besides those it inherits (the soak preloads its fault shim).
  void SetEnvironment(std::vector<std::string> variables) {
    environment_ = std::move(variables);
  }
  // The flags its next start takes instead (a server restarted in place
  // with another link to its cluster).
  void SetFlags(std::vector<std::string> flags) { flags_ = std::move(flags); }

  // Starts it and waits for its "listening" line (in cluster mode, printed
  // once it has joined).
  void Start() {
    if (!reserved_.has_value()) {
      absl::StatusOr<ReservedPort> reserved = ReservedPort::Reserve();
      ASSERT_TRUE(reserved.ok()) << reserved.status();
      reserved_.emplace(*std::move(reserved));
      port_ = reserved_->port();
    }
    int out[2];
    ASSERT_EQ(pipe(out), 0);
    std::vector<std::string> arguments = {
        server_, absl::StrCat("--listen=127.0.0.1:", port_),
        "--data_dir=" + data_dir_, "--metrics_listen="};
    arguments.insert(arguments.end(), flags_.begin(), flags_.end());
    std::vector<char*> argv;
    for (std::string& argument : arguments) argv.push_back(argument.data());
    argv.push_back(nullptr);
    const std::string log = data_dir_ + ".log";
    pid_ = fork();
    ASSERT_GE(pid_, 0);
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      dup2(out[1], STDOUT_FILENO);
      const int err = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      dup2(err, STDERR_FILENO);
      close(out[0]);
      for (std::string& variable : environment_) putenv(variable.data());
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(out[1]);
    FILE* lines = fdopen(out[0], "r");
    char line[256] = {};
    ASSERT_NE(fgets(line, sizeof line, lines), nullptr)
        << "the server did not start; see " << log;
    fclose(lines);
    const std::string text = line;
    port_ = std::stoi(text.substr(text.rfind(':') + 1));
  }

  // kill -9, and waits for it to be gone. True if the kill ended it; false
  // if it was not started or had ended by itself (a crash: see its log).
  bool Kill() {
    if (pid_ <= 0) return false;
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
  }

  // SIGSTOP and SIGCONT: a server that stops answering without closing
  // its connections (a stop-the-world stall, a VM migrating), then goes on.
  void Pause() {
    if (pid_ > 0) kill(pid_, SIGSTOP);
  }
  void Resume() {
    if (pid_ > 0) kill(pid_, SIGCONT);
  }

  bool running() const { return pid_ > 0; }
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }
  const std::string& data_dir() const { return data_dir_; }

 private:
  const std::string server_;
  const std::string data_dir_;
  std::vector<std::string> flags_;
  std::vector<std::string> environment_;
  pid_t pid_ = -1;
  std::optional<ReservedPort> reserved_;
  int port_ = 0;
};

}  // namespace streamreg

#endif  // STREAMREG_TESTS_SUPPORT_SERVER_PROCESS_H_
