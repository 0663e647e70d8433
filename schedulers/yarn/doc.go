// Package yarn is Egret's scheduler for Apache Hadoop YARN, registered as
// "yarn" and also served as the plugin binary egret-scheduler-yarn.
//
// It works in library mode through the YARN Services REST API
// (/app/v1/services on the ResourceManager, Hadoop 3.1+,
// yarn.webapp.api-service.enable=true): each topology is one YARN service,
// whose application master is Hadoop's own; it keeps the containers
// running, replaces failed ones and flexes components. No Java code of
// Egret's runs in the cluster. Every call finds the service again by its
// name (ServiceName), so the scheduler keeps no state.
//
// # The service
//
// The service has two components. tmanager (one instance, tmanager-0) is
// container 0; worker has one instance per container of the packing plan,
// worker-<i> being container i+1 (the launch command computes the index
// from YARN's ${COMPONENT_ID}). Workers all have the size of the plan's
// largest container (a component has one size); the topology manager's
// size is egret.yarn.tmanager.vcores and egret.yarn.tmanager.memory.
// Restart policy ALWAYS: YARN starts a new container for an instance
// whose container exits, for whatever reason.
//
// YARN localizes the topology package (an hdfs:// URI from the hdfs
// uploader) as an ARCHIVE resource, unpacked to package/ in each
// container's working directory, and runs
//
//	EGRET_HOST=$NM_HOST exec <egret> executor --topology T --topology-id ID
//	    --container C --work-dir $PWD --config-file package/cluster.json
//
// where <egret> is ./egret, localized from egret.package.core.uri when it
// is set, else ./package/egret (the egret binary carried in the package).
// The daemons listen on ports the kernel picks and publish them through
// the state manager. The service's properties record the topology, its id,
// cluster, role, environment and package.
//
// # Operations
//
// Schedule checks the queue (a leaf queue of the capacity scheduler) and
// the container sizes (against the queue's maximum allocation and the
// largest NodeManager) before submitting, then waits until every
// container runs (egret.yarn.launch.timeout); a service that does not come
// up is deleted, and the error carries the application's diagnostics.
// Kill deletes the service (YARN stops the containers and removes the
// service's HDFS directory). Restart signals GRACEFUL_SHUTDOWN to the
// container(s) through the ResourceManager and the application master
// replaces them. Update flexes the worker component. JobLinks gives the
// application's pages in the ResourceManager's UI and UI2.
package yarn
