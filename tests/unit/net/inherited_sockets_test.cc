// The registry of inherited listening sockets: an address's sockets are dealt to the workers
// in turn, a worker without one shares another's queue, the admin socket is found by its
// mark, and what is not a listening TCP socket is refused.
#include "lb/net/inherited_sockets.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <set>
#include <vector>

#include "tests/support/listening_socket.h"

namespace lb {
namespace {

using test::listeningSocket;
using test::socketInode;

class InheritedSocketsTest : public ::testing::Test {
 protected:
  void SetUp() override { releaseInheritedSockets(); }
  void TearDown() override { releaseInheritedSockets(); }
};

TEST_F(InheritedSocketsTest, AnAddressesSocketsAreDealtToTheWorkersInTurn) {
  sockaddr_in addr{};
  int first = listeningSocket(0, &addr);
  ASSERT_GE(first, 0);
  std::vector<ino_t> inodes{socketInode(first)};
  ASSERT_TRUE(addInheritedSocket(first));
  for (int i = 0; i < 2; ++i) {
    sockaddr_in same{};
    int fd = listeningSocket(ntohs(addr.sin_port), &same);
    ASSERT_GE(fd, 0);
    inodes.push_back(socketInode(fd));
    ASSERT_TRUE(addInheritedSocket(fd));
  }
  const auto* a = reinterpret_cast<const sockaddr*>(&addr);
  EXPECT_TRUE(haveInheritedSocket(a, sizeof addr));
  // Two workers: worker 0 takes the first and third, worker 1 the second.
  std::vector<int> w0 = takeInheritedSockets(a, sizeof addr, 0, 2);
  std::vector<int> w1 = takeInheritedSockets(a, sizeof addr, 1, 2);
  ASSERT_EQ(w0.size(), 2u);
  ASSERT_EQ(w1.size(), 1u);
  EXPECT_EQ(socketInode(w0[0]), inodes[0]);
  EXPECT_EQ(socketInode(w0[1]), inodes[2]);
  EXPECT_EQ(socketInode(w1[0]), inodes[1]);
  // Five workers: the fourth has none of its own and shares the second's queue.
  std::vector<int> w3 = takeInheritedSockets(a, sizeof addr, 3, 5);
  ASSERT_EQ(w3.size(), 1u);
  EXPECT_EQ(socketInode(w3[0]), inodes[3 % 3]);
  for (auto* v : {&w0, &w1, &w3})
    for (int fd : *v) close(fd);
}

// The admin socket is found at its own address only: a new config that moved admin.listen
// binds anew, and the old socket is left to close.
TEST_F(InheritedSocketsTest, TheAdminSocketIsFoundAtItsAddressAndNowhereElse) {
  sockaddr_in web{}, admin{}, moved{};
  int web_fd = listeningSocket(0, &web);
  int admin_fd = listeningSocket(0, &admin);
  int moved_fd = listeningSocket(0, &moved);   // only for a free address of its own
  ASSERT_GE(web_fd, 0);
  ASSERT_GE(admin_fd, 0);
  ASSERT_GE(moved_fd, 0);
  close(moved_fd);
  const ino_t admin_inode = socketInode(admin_fd);
  ASSERT_TRUE(addInheritedSocket(web_fd));
  ASSERT_TRUE(addInheritedAdminSocket(admin_fd));
  EXPECT_FALSE(haveInheritedSocket(reinterpret_cast<const sockaddr*>(&moved), sizeof moved));
  EXPECT_EQ(takeInheritedAdminSocket(reinterpret_cast<const sockaddr*>(&moved), sizeof moved), -1);
  int got = takeInheritedAdminSocket(reinterpret_cast<const sockaddr*>(&admin), sizeof admin);
  ASSERT_GE(got, 0);
  EXPECT_EQ(socketInode(got), admin_inode);
  close(got);
}

TEST_F(InheritedSocketsTest, WhatIsNotAListeningTcpSocketIsRefusedAndClosed) {
  int udp = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  int unbound = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  EXPECT_FALSE(addInheritedSocket(udp));
  EXPECT_FALSE(addInheritedSocket(unbound));
  EXPECT_EQ(fcntl(udp, F_GETFD), -1) << "a refused fd is closed";
  EXPECT_TRUE(inheritedAddresses().empty());
}

}  // namespace
}  // namespace lb
