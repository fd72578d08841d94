/* SPDX-License-Identifier: Apache-2.0 */
/* test_transports.c - the transports of host-memory ranks in several
 * processes (xdev/transport.h): XDEV_HOST_COMM picks one, the id carries
 * its name, a module found by name carries a group (tests/plugins/
 * solo_transport.c, as a third party would write one), a broken or absent
 * module and a malformed setting are refused with messages that say why,
 * and auto picks MPI only when the launcher says the ranks are on several
 * hosts. The runs across processes are comm.transport_shm and
 * comm.transport_mpi (transport_rank.c under mpirun). */
#include <stdlib.h>
#include <string.h>

#include "xdev/xdev.h"
#include "xt.h"

static const char *id_transport(const xdev_communicator_id_t *id) {
    return (const char *)id->bytes + 16; /* after the 16-byte header */
}

static xdev_device_t cpu0(void) {
    return (xdev_device_t){XDEV_DEVICE_CPU, 0};
}

static void clear_launcher(void) {
    static const char *const vars[] = {"RANK",
                                       "WORLD_SIZE",
                                       "LOCAL_WORLD_SIZE",
                                       "OMPI_COMM_WORLD_RANK",
                                       "OMPI_COMM_WORLD_SIZE",
                                       "OMPI_COMM_WORLD_LOCAL_SIZE",
                                       "PMI_RANK",
                                       "SLURM_PROCID",
                                       "SLURM_NTASKS",
                                       "SLURM_NNODES",
                                       "SLURM_STEP_NUM_NODES"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
}

/* A group of one over the solo module: its collectives run through it. */
START_TEST(module_carries_a_group) {
    setenv("XDEV_HOST_COMM", "solo", 1);
    xdev_communicator_id_t id;
    XT_OK(xdev_communicator_unique_id(XDEV_DEVICE_CPU, &id));
    ck_assert_str_eq(id_transport(&id), "solo");
    /* The id decides, not the joining process's setting. */
    setenv("XDEV_HOST_COMM", "shm", 1);
    xdev_communicator_t c;
    XT_OK(xdev_communicator_init_rank(&c, 1, &id, 0, cpu0()));
    const char *engine;
    XT_OK(xdev_communicator_engine(c, &engine));
    ck_assert_str_eq(engine, "solo");
    int32_t h[4] = {1, 2, 3, 4}, back[4] = {0};
    int32_t *s, *r;
    XT_OK(xdev_malloc_device(cpu0(), (void **)&s, sizeof h));
    XT_OK(xdev_malloc_device(cpu0(), (void **)&r, sizeof h));
    XT_OK(xdev_memcpy(s, h, sizeof h));
    XT_OK(xdev_all_reduce(c, s, r, 4, XDEV_DTYPE_I32, XDEV_REDUCE_SUM, NULL));
    XT_OK(xdev_memcpy(back, r, sizeof back));
    ck_assert_int_eq(memcmp(back, h, sizeof h), 0);
    XT_OK(xdev_communicator_check(c));
    /* What the module refuses reaches the caller with its words. */
    XT_OK(xdev_all_reduce(c, s, r, 4, XDEV_DTYPE_I32, XDEV_REDUCE_PROD, NULL));
    xdev_status_t st = xdev_device_synchronize(cpu0());
    if (st == XDEV_SUCCESS) st = xdev_communicator_check(c);
    XT_ERR(XDEV_ERROR_NOT_SUPPORTED, st, "refuses products");
    XT_OK(xdev_free(s));
    XT_OK(xdev_free(r));
    XT_OK(xdev_communicator_destroy(c));
    /* A group the module cannot carry: its reason. */
    setenv("XDEV_HOST_COMM", "solo", 1);
    XT_OK(xdev_communicator_unique_id(XDEV_DEVICE_CPU, &id));
    unsetenv("XDEV_COMM_TIMEOUT");
    XT_ERR(XDEV_ERROR_NOT_SUPPORTED, xdev_communicator_init_rank(&c, 2, &id, 1, cpu0()),
           "groups of one rank");
    unsetenv("XDEV_HOST_COMM");
}
END_TEST

/* Broken, absent and misnamed modules, and malformed settings. */
START_TEST(refusals_say_why) {
    xdev_communicator_id_t id;
    static const struct {
        const char *name, *needle;
    } broken[] = {{"badabi", "another transport ABI"},
                  {"misnamed", "names another transport"},
                  {"norun", "lacks a slot"},
                  {"absent", "not installed; tried:"}};
    for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++) {
        setenv("XDEV_HOST_COMM", broken[i].name, 1);
        XT_ERR(XDEV_ERROR_BACKEND_UNAVAILABLE, xdev_communicator_unique_id(XDEV_DEVICE_CPU, &id),
               broken[i].needle);
        ck_assert_msg(strstr(xdev_last_error(), broken[i].name) != NULL, "%s", xdev_last_error());
    }
    static const char *const malformed[] = {"Solo", "two words", "../solo", "a-b",
                                            "much_too_long_a_name"};
    for (size_t i = 0; i < sizeof malformed / sizeof malformed[0]; i++) {
        setenv("XDEV_HOST_COMM", malformed[i], 1);
        XT_ERR(XDEV_ERROR_ENV, xdev_communicator_unique_id(XDEV_DEVICE_CPU, &id), "XDEV_HOST_COMM");
    }
    setenv("XDEV_HOST_COMM", "", 1); /* empty: auto */
    XT_OK(xdev_communicator_unique_id(XDEV_DEVICE_CPU, &id));
    ck_assert_str_eq(id_transport(&id), "shm");
    unsetenv("XDEV_HOST_COMM");
}
END_TEST

/* auto: shm on one host, mpi when the launcher says the ranks are not all
 * on this one (the id then names mpi; where the module was not built, the
 * call fails saying how to get it). */
START_TEST(auto_follows_the_launcher) {
    unsetenv("XDEV_HOST_COMM");
    xdev_communicator_id_t id;
    static const char *const one_host[][2] = {{"OMPI_COMM_WORLD_SIZE", "4"},
                                              {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}};
    static const char *const two_hosts[][2] = {{"OMPI_COMM_WORLD_SIZE", "4"},
                                               {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}};
    static const char *const slurm_nodes[][2] = {{"SLURM_NTASKS", "4"}, {"SLURM_NNODES", "2"}};
    /* torchrun on two nodes: no MPI world to run CPU ranks in */
    clear_launcher();
    setenv("RANK", "1", 1);
    setenv("WORLD_SIZE", "4", 1);
    setenv("LOCAL_WORLD_SIZE", "2", 1);
    XT_ERR(XDEV_ERROR_NOT_SUPPORTED, xdev_communicator_unique_id(XDEV_DEVICE_CPU, &id),
           "mpirun or srun");
    for (int c = 0; c < 4; c++) {
        clear_launcher();
        const char *(*vars)[2] = c == 1   ? (const char *(*)[2])one_host
                                 : c == 2 ? (const char *(*)[2])two_hosts
                                 : c == 3 ? (const char *(*)[2])slurm_nodes
                                          : NULL;
        if (vars != NULL) {
            setenv(c == 3 ? "SLURM_PROCID" : "OMPI_COMM_WORLD_RANK", "1", 1);
            for (int v = 0; v < 2; v++)
                setenv(vars[v][0], vars[v][1], 1);
        }
        bool spread = c >= 2;
        xdev_status_t st = xdev_communicator_unique_id(XDEV_DEVICE_CPU, &id);
        if (!spread) {
            XT_OK(st);
            ck_assert_str_eq(id_transport(&id), "shm");
        } else if (st == XDEV_SUCCESS) {
            ck_assert_str_eq(id_transport(&id), "mpi");
        } else {
            XT_ERR(XDEV_ERROR_BACKEND_UNAVAILABLE, st, "mpi transport");
        }
    }
    clear_launcher();
}
END_TEST

int main(int argc, char **argv) {
    Suite *su = suite_create("transports");
    TCase *tc = tcase_create("transports");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, module_carries_a_group);
    tcase_add_test(tc, refusals_say_why);
    tcase_add_test(tc, auto_follows_the_launcher);
    suite_add_tcase(su, tc);
    return xt_run(srunner_create(su), "transports", argc, argv);
}
