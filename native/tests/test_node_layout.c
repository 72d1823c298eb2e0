/* test_node_layout.c — the node layout from host names, as IOR's QueryNodeMapping and GetNumTasksOnNode0 see
 * it: block mapping when rank 1 shares rank 0's host (or there is one rank), round-robin otherwise; nodes are
 * the distinct names, tasks on node 0 the ranks with rank 0's name. */
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
    return TEST_DONE();
}
