package io.egret.minicluster;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.concurrent.CountDownLatch;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.registry.server.services.MicroZookeeperService;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.MiniYARNCluster;

/**
 * Starts the master side of a one-node Hadoop cluster for Egret's tests: the
 * registry's ZooKeeper, one NameNode and DataNode, and one ResourceManager
 * with the YARN Services REST API. The NodeManager runs in a JVM of its own
 * (started by the caller with the same configuration): in one JVM the
 * NodeManager's web app takes over the ResourceManager's /ws/v1 REST API
 * (both register with Guice's static filter). Every address comes from the
 * core-site.xml and yarn-site.xml that the caller puts first on the class
 * path: the Services API and the service application masters build their
 * configuration from the class path, not from this process's objects.
 *
 * <p>Usage: {@code MiniCluster <work-dir> <namenode-port> <namenode-http-port> <ready-file>}.
 * The working directory holds every file the cluster writes. Once the
 * cluster runs, the ready file is written (atomically) with the
 * ResourceManager's web address and the NameNode's address, one per line:
 * {@code rm=http://host:port} and {@code namenode=host:port}. The cluster
 * stops when standard input reaches end of file (the parent died or
 * closed it) or on SIGTERM.
 */
public final class MiniCluster {
  private MiniCluster() {}

  public static void main(String[] args) {
    try {
      run(args);
    } catch (Throwable t) {
      // A half-started cluster keeps non-daemon threads alive: exit, so
      // that the caller sees the failure at once.
      System.err.println("egret minicluster failed: " + t);
      t.printStackTrace();
      System.exit(1);
    }
  }

  private static void run(String[] args) throws Exception {
    if (args.length != 4) {
      System.err.println("usage: MiniCluster <work-dir> <namenode-port> <namenode-http-port> <ready-file>");
      System.exit(2);
    }
    File work = new File(args[0]).getAbsoluteFile();
    int nnPort = Integer.parseInt(args[1]);
    int nnHttpPort = Integer.parseInt(args[2]);
    Path ready = new File(args[3]).getAbsoluteFile().toPath();

    Configuration base = new YarnConfiguration();

    MicroZookeeperService zk = new MicroZookeeperService("registry-zookeeper");
    zk.init(base);
    zk.start();

    Configuration dfsConf = new HdfsConfiguration(base);
    MiniDFSCluster dfs = new MiniDFSCluster.Builder(dfsConf, new File(work, "dfs"))
        .nameNodePort(nnPort)
        .nameNodeHttpPort(nnHttpPort)
        .numDataNodes(1)
        .format(true)
        .build();
    dfs.waitActive();

    MiniYARNCluster yarn = new MiniYARNCluster("egret", 1, 0, 1, 1);
    yarn.init(new YarnConfiguration(base));
    yarn.start();

    CountDownLatch stopped = new CountDownLatch(1);
    Runnable stop = () -> {
      synchronized (MiniCluster.class) {
        if (stopped.getCount() == 0) {
          return;
        }
        yarn.stop();
        dfs.shutdown();
        zk.stop();
        stopped.countDown();
      }
    };
    Runtime.getRuntime().addShutdownHook(new Thread(stop, "stop-minicluster"));

    String rm = "http://" + yarn.getConfig().get(YarnConfiguration.RM_WEBAPP_ADDRESS);
    String nn = "127.0.0.1:" + dfs.getNameNodePort();
    writeAtomically(ready, "rm=" + rm + "\nnamenode=" + nn + "\n");
    System.err.println("egret minicluster ready: rm=" + rm + " namenode=" + nn);

    InputStream in = System.in;
    byte[] buf = new byte[256];
    while (in.read(buf) >= 0) {
      // Wait for end of file: the parent closed the pipe or died.
    }
    stop.run();
    System.exit(0);
  }

  private static void writeAtomically(Path dst, String content) throws IOException {
    Path tmp = dst.resolveSibling(dst.getFileName() + ".tmp");
    Files.write(tmp, content.getBytes(StandardCharsets.UTF_8));
    Files.move(tmp, dst, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
  }
}
