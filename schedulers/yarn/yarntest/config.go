package yarntest

import (
	"fmt"
	"path/filepath"
	"strings"
)

func addr(port int) string { return fmt.Sprintf("127.0.0.1:%d", port) }

// configFiles returns the cluster's configuration files by name.
func configFiles(p ports, dir string) map[string]string {
	core := [][2]string{
		{"hadoop.tmp.dir", filepath.Join(dir, "tmp")},
		{"fs.defaultFS", "hdfs://" + addr(p.nn)},
		{"hadoop.registry.zk.quorum", addr(p.zk)},
		{"hadoop.registry.zk.service.host", "127.0.0.1"},
		{"hadoop.registry.zk.service.port", fmt.Sprint(p.zk)},
	}
	hdfs := [][2]string{
		{"dfs.replication", "1"},
		{"dfs.permissions.enabled", "true"},
		{"dfs.namenode.rpc-address", addr(p.nn)},
		{"dfs.datanode.du.reserved", "0"},
	}
	yarn := [][2]string{
		{"yarn.minicluster.fixed.ports", "true"},
		{"yarn.is.minicluster", "true"},
		{"yarn.resourcemanager.hostname", "127.0.0.1"},
		{"yarn.resourcemanager.address", addr(p.rm)},
		{"yarn.resourcemanager.scheduler.address", addr(p.rmScheduler)},
		{"yarn.resourcemanager.resource-tracker.address", addr(p.rmTracker)},
		{"yarn.resourcemanager.admin.address", addr(p.rmAdmin)},
		{"yarn.resourcemanager.webapp.address", addr(p.rmWeb)},
		{"yarn.nodemanager.hostname", "127.0.0.1"},
		{"yarn.nodemanager.local-dirs", filepath.Join(dir, "nm", "local")},
		{"yarn.nodemanager.log-dirs", filepath.Join(dir, "nm", "logs")},
		{"yarn.nodemanager.address", addr(p.nm)},
		{"yarn.nodemanager.localizer.address", addr(p.nmLocalizer)},
		{"yarn.nodemanager.webapp.address", addr(p.nmWeb)},
		{"yarn.nodemanager.collector-service.address", addr(p.nmCollector)},
		{"yarn.timeline-service.enabled", "false"},
		{"yarn.webapp.api-service.enable", "true"},
		{"yarn.nodemanager.resource.memory-mb", fmt.Sprint(NodeMemoryMB)},
		{"yarn.nodemanager.resource.cpu-vcores", fmt.Sprint(NodeVcores)},
		{"yarn.scheduler.minimum-allocation-mb", "128"},
		{"yarn.scheduler.maximum-allocation-mb", fmt.Sprint(MaxAllocationMB)},
		{"yarn.scheduler.maximum-allocation-vcores", fmt.Sprint(MaxAllocationVcores)},
		{"yarn.nodemanager.vmem-check-enabled", "false"},
		{"yarn.nodemanager.pmem-check-enabled", "false"},
		{"yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage", "100.0"},
		{"yarn.nodemanager.disk-health-checker.min-free-space-per-disk-mb", "0"},
		{"yarn.nodemanager.delete.debug-delay-sec", "0"},
		{"yarn.log-aggregation-enable", "false"},
		{"yarn.service.am-resource.memory", "512"},
		{"yarn.service.am.java.opts", strings.Join(jvmFlags("256m"), " ")},
	}
	capacity := [][2]string{
		{"yarn.scheduler.capacity.resource-calculator", "org.apache.hadoop.yarn.util.resource.DominantResourceCalculator"},
		{"yarn.scheduler.capacity.maximum-am-resource-percent", "0.5"},
		{"yarn.scheduler.capacity.root.queues", strings.Join(Queues, ",")},
	}
	for _, q := range Queues {
		capacity = append(capacity,
			[2]string{"yarn.scheduler.capacity.root." + q + ".capacity", fmt.Sprint(100 / len(Queues))},
			[2]string{"yarn.scheduler.capacity.root." + q + ".maximum-capacity", "100"},
			[2]string{"yarn.scheduler.capacity.root." + q + ".state", "RUNNING"},
		)
	}
	return map[string]string{
		"core-site.xml":          siteXML(core),
		"hdfs-site.xml":          siteXML(hdfs),
		"yarn-site.xml":          siteXML(yarn),
		"capacity-scheduler.xml": siteXML(capacity),
		"log4j.properties": strings.Join([]string{
			"log4j.rootLogger=INFO,stderr",
			"log4j.appender.stderr=org.apache.log4j.ConsoleAppender",
			"log4j.appender.stderr.Target=System.err",
			"log4j.appender.stderr.layout=org.apache.log4j.PatternLayout",
			"log4j.appender.stderr.layout.ConversionPattern=%d{ISO8601} %p %c{1}: %m%n",
			"log4j.logger.org.apache.hadoop.util.NativeCodeLoader=ERROR",
			"",
		}, "\n"),
	}
}
