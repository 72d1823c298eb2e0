/* test_node_layout.c — the node layout from host names, as IOR's QueryNodeMapping and GetNumTasksOnNode0 see
 * it: block mapping when rank 1 shares rank 0's host (or there is one rank), round-robin otherwise; nodes are
 * the distinct names, tasks on node 0 the ranks with rank 0's name; and the placement the document records
 * (runs of consecutive ranks on one host). */
#include <string.h>

#include "check.h"
#include "comm/comm.h"

static struct iol_node_layout layout_of(const char *const *hosts, int n)
{
    static char names[16][IOL_HOST_MAX];
    memset(names, 0, sizeof names);
    for (int i = 0; i < n; i++) strncpy(names[i], hosts[i], IOL_HOST_MAX - 1);
    struct iol_node_layout l;
    iol_node_layout(&names[0][0], n, &l);
    return l;
}

int main(void)
{
    const char *one[] = {"n0"};
    struct iol_node_layout l = layout_of(one, 1);
    CHECK(l.nodes == 1 && l.tasks_on_node0 == 1 && l.block_mapping == 1, "one rank: %d %d %d", l.nodes,
          l.tasks_on_node0, l.block_mapping);

    const char *same[] = {"n0", "n0", "n0", "n0"};
    l = layout_of(same, 4);
    CHECK(l.nodes == 1 && l.tasks_on_node0 == 4 && l.block_mapping == 1, "one node");

    const char *block[] = {"n0", "n0", "n0", "n1", "n1", "n1"};
    l = layout_of(block, 6);
    CHECK(l.nodes == 2 && l.tasks_on_node0 == 3 && l.block_mapping == 1, "block: %d %d %d", l.nodes,
          l.tasks_on_node0, l.block_mapping);

    const char *cyclic[] = {"n0", "n1", "n2", "n0", "n1", "n2"};
    l = layout_of(cyclic, 6);
    CHECK(l.nodes == 3 && l.tasks_on_node0 == 2 && l.block_mapping == 0, "cyclic: %d %d %d", l.nodes,
          l.tasks_on_node0, l.block_mapping);

    /* Uneven: 5 ranks on 2 nodes, node 0 has 3 — counted from rank 0's node, as IOR does. */
    const char *uneven[] = {"b", "b", "a", "a", "b"};
    l = layout_of(uneven, 5);
    CHECK(l.nodes == 2 && l.tasks_on_node0 == 3 && l.block_mapping == 1, "uneven: %d %d %d", l.nodes,
          l.tasks_on_node0, l.block_mapping);

    /* One rank per node. */
    const char *spread[] = {"x", "y", "z"};
    l = layout_of(spread, 3);
    CHECK(l.nodes == 3 && l.tasks_on_node0 == 1 && l.block_mapping == 0, "spread");

    /* Placement: runs of consecutive ranks on one host, in rank order (the names are not sorted). */
    static char names[6][IOL_HOST_MAX];
    memset(names, 0, sizeof names);
    const char *placed[] = {"n0", "n0", "n1", "n1", "n1", "n0"};
    for (int i = 0; i < 6; i++) strncpy(names[i], placed[i], IOL_HOST_MAX - 1);
    struct iol_placement runs[6];
    int n = iol_placement_runs(&names[0][0], 6, NULL);
    CHECK(n == 3, "placement count: %d", n);
    CHECK(iol_placement_runs(&names[0][0], 6, runs) == 3, "placement runs");
    CHECK(strcmp(runs[0].host, "n0") == 0 && runs[0].first_rank == 0 && runs[0].ranks == 2, "run 0");
    CHECK(strcmp(runs[1].host, "n1") == 0 && runs[1].first_rank == 2 && runs[1].ranks == 3, "run 1");
    CHECK(strcmp(runs[2].host, "n0") == 0 && runs[2].first_rank == 5 && runs[2].ranks == 1, "run 2");
    CHECK(iol_placement_runs(&names[0][0], 1, runs) == 1 && runs[0].ranks == 1, "one rank");
    return TEST_DONE();
}
