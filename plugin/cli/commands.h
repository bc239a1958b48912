/*
 * `vcpuplace` subcommands. Each takes the arguments after its name (argv[0] is the
 * subcommand) and returns the process exit code: 0 success (placed), 1 bad input or
 * failure, 2 refused by policy, 3 vcpuplaced unreachable (no daemon at the socket, or no
 * answer in time), so that a script can tell "retry later" from "wrong".
 */
#pragma once

#define VP_EXIT_OK 0
#define VP_EXIT_ERROR 1
#define VP_EXIT_REFUSED 2
#define VP_EXIT_UNREACHABLE 3

int vpCmdPlan(int argc, char **argv);
int vpCmdSimulate(int argc, char **argv);
int vpCmdScore(int argc, char **argv);
int vpCmdTopology(int argc, char **argv);
int vpCmdStatus(int argc, char **argv);
int vpCmdPolicy(int argc, char **argv);
int vpCmdPinConfig(int argc, char **argv);
int vpCmdTop(int argc, char **argv);
int vpCmdRebalance(int argc, char **argv);
int vpCmdMetrics(int argc, char **argv);
int vpCmdCapacity(int argc, char **argv);
int vpCmdProviderConfig(int argc, char **argv);
